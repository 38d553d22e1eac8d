"""``sdr facets train [--data-dir CSABSTRUCT] [--out MODEL] [--force]`` and ``sdr facets split ABSTRACTS.jsonl
--out SPLIT.jsonl [--model MODEL] [--skip-bad] [--force]``: parsing, output checks and printing only.
"""
from __future__ import annotations

import json
from pathlib import Path

from sdr.facets.classifier import SentenceClassifier, default_model_path, load_or_train, train_classifier
from sdr.facets.files import split_file
from sdr.facets.labels import OBJECTIVE_TARGETS
from sdr.facets.splitters import ClassifierSplitter
from sdr.jsonio import require_file
from sdr.outputs import output_file


def register(subparsers) -> None:
    parser = subparsers.add_parser("facets", help="FLeW's facet splitter: abstracts → background/method/result")
    commands = parser.add_subparsers(dest="facets_command", required=True)
    train = commands.add_parser("train", help="train the sentence classifier on CSAbstruct and cache it")
    train.add_argument("--data-dir", default=None, help="CSAbstruct folder with train.jsonl (default: located)")
    train.add_argument("--out", type=output_file, default=None, help=f"model file (default: {default_model_path()})")
    train.add_argument("--force", action="store_true", help="replace the model file if it exists")
    train.set_defaults(func=_cli_train)
    split = commands.add_parser("split", help='split {"paper_id","title","abstract"} JSONL into facets')
    split.add_argument("abstracts", help="input JSONL")
    split.add_argument("--out", type=output_file, required=True,
                       help="output JSONL (input fields + background/method/result)")
    split.add_argument("--model", default=None, help="classifier file (default: the cached one, trained if absent)")
    split.add_argument("--objective-to", default="method", choices=OBJECTIVE_TARGETS,
                       help="facet of CSAbstruct 'objective' sentences (default: method = FLeW's 'contribution')")
    split.add_argument("--skip-bad", action="store_true",
                       help="skip bad lines instead of stopping; their count and the first ones are printed")
    split.add_argument("--force", action="store_true", help="replace --out if it exists")
    split.set_defaults(func=_cli_split)


def _cli_train(args) -> int:
    from sdr import datasets
    from sdr.outputs import Outputs

    data_dir = args.data_dir or datasets.locate("csabstruct")
    if data_dir is None:
        raise FileNotFoundError("CSAbstruct not found: pass --data-dir, set SDR_DATA or `sdr data fetch csabstruct`")
    out = Path(args.out) if args.out else default_model_path()
    require_file(Path(data_dir) / "train.jsonl", "CSAbstruct train.jsonl")
    # checked before the minutes of training: not inside the data folder, not over a model without --force
    outputs = Outputs(inputs={"--data-dir": data_dir}, outputs={"--out": out}, force=args.force).check()
    with outputs.commit() as staged:
        model, _ = train_classifier(data_dir, staged["--out"])
    print(json.dumps({"model": str(out), **model.trained_on}))
    return 0


def _cli_split(args) -> int:
    from sdr.outputs import Outputs

    cached = default_model_path()
    trains = not args.model and not cached.exists()  # then the classifier is trained and cached first
    Outputs(inputs={"ABSTRACTS": args.abstracts, "--model": args.model or (None if trains else cached)},
            outputs={"--out": args.out, "model cache": cached if trains else None}, force=args.force).check()
    classifier = SentenceClassifier.load(args.model) if args.model else load_or_train()
    report = split_file(args.abstracts, args.out, ClassifierSplitter(classifier, args.objective_to),
                        skip_bad=args.skip_bad)
    print(json.dumps(report))
    return 0
