"""``sdr data list | fetch NAME | fetch --for CHAPTER | status --for CHAPTER | verify NAME``.

Only the command line: parsing and printing. It changes with the commands' options and output, while the
work is done by :mod:`sdr.datasets.download` and :mod:`sdr.datasets.status`.
"""

from __future__ import annotations

import json
import sys

from sdr.datasets.download import DatasetUnavailable, fetch_any, fetch_model
from sdr.datasets.registry import CHAPTER_DATA, CHAPTER_MODELS, DATASETS, REAL_PROFILE_DATA, get
from sdr.datasets.status import chapter_status, status_table, verified_folder, verify
from sdr.jsonio import file_kind


def register(subparsers) -> None:
    """``sdr data list | fetch NAME | fetch --for CHAPTER | status --for CHAPTER | verify NAME``."""
    parser = subparsers.add_parser("data", help="benchmark and corpus data: list, fetch, status, verify")
    commands = parser.add_subparsers(dest="data_command", required=True)
    listing = commands.add_parser("list", help="every dataset and where it is found")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=_cli_list)
    fetching = commands.add_parser("fetch", help="download a dataset (or everything a chapter reads at paper) "
                                                 "into the cache")
    fetching.add_argument("name", nargs="?", choices=sorted(DATASETS), help="one dataset")
    fetching.add_argument("--for", dest="chapter", choices=sorted(CHAPTER_DATA),
                          help="every dataset the chapter reads at the paper profile")
    fetching.add_argument("--model", help="a Hugging Face model into its cache")
    fetching.add_argument("--real-profile", action="store_true",
                          help="every dataset the real profile reads when found (the shared mirror's content)")
    fetching.add_argument("--force", action="store_true", help="download again even if present")
    fetching.add_argument("--release", help="the Semantic Scholar Datasets API release a bulk dataset is read from "
                                            "(an id of the API's release listing, e.g. 2024-04-02; default the latest)")
    fetching.set_defaults(func=_cli_fetch)
    status = commands.add_parser("status", help="what a chapter reads at paper: present, missing, unpinned")
    status.add_argument("--for", dest="chapter", required=True, choices=sorted(CHAPTER_DATA))
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(func=_cli_status)
    checking = commands.add_parser("verify", help="check a dataset's files against their sha256")
    checking.add_argument("name", choices=sorted(DATASETS))
    checking.set_defaults(func=_cli_verify)


def _cli_list(args) -> int:
    rows = status_table()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(r["name"]) for r in rows)
    where = max(len(r["where"]) for r in rows)
    for row in rows:
        print(f"{row['name']:<{width}}  {row['where']:<{where}}  {row['licence'][:40]:<40}  {row['description'][:70]}")
        if row.get("detail"):
            print(f"{'':<{width}}  {row['detail']}")
    return 0


def _cli_fetch(args) -> int:
    if args.model:
        if args.name or args.chapter:
            raise ValueError("give a dataset NAME, --for CHAPTER or --model NAME")
        print(f"model {fetch_model(args.model)}: in the Hugging Face cache")
        return 0
    if args.real_profile:
        if args.name or args.chapter:
            raise ValueError("give a dataset NAME, --for CHAPTER, --real-profile or --model NAME")
        names = list(REAL_PROFILE_DATA)
    elif bool(args.name) == bool(args.chapter):
        raise ValueError("give a dataset NAME, --for CHAPTER, --real-profile or --model NAME")
    else:
        names = [args.name] if args.name else list(CHAPTER_DATA[args.chapter])
    if args.release is not None and not args.name:
        raise ValueError("--release goes with one bulk dataset NAME (sdr data fetch s2ag_bulk_flew --release ID)")
    check_fetch_targets(names)
    failed = []
    if args.chapter:
        for model in CHAPTER_MODELS.get(args.chapter, ()):
            try:
                print(f"model {fetch_model(model)}: in the Hugging Face cache")
            except DatasetUnavailable as error:
                failed.append(model)
                print(f"{model}: not fetched: {error}", file=sys.stderr)
    for name in names:
        dataset = get(name)
        print(f"{name}: {dataset.description}" + (f" ({dataset.size})" if dataset.size else ""), flush=True)
        try:
            print(f"{name}: {fetch_any(name, force=args.force, release=args.release)}")
        except DatasetUnavailable as error:
            failed.append(name)
            print(f"{name}: not fetched: {error}", file=sys.stderr)
    if failed:
        print(f"not fetched: {', '.join(failed)} (see the messages above)", file=sys.stderr)
        return 1
    return 0


def check_fetch_targets(names) -> None:
    """The download cache and each dataset's folder in it, through the output layer before anything is
    downloaded: not a source folder of the repository, not a link, writable."""
    from sdr.datasets.download import cache_dir
    from sdr.outputs import Outputs

    cache = cache_dir()
    stores = {"$SDR_DATA_CACHE (the download cache)": cache}
    stores.update({f"the cache folder of {name}": cache / get(name).folder for name in names})
    Outputs(inputs={}, stores=stores).check()


def _cli_status(args) -> int:
    rows = chapter_status(args.chapter)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            print(f"{row['dataset']:<28} {row['state']:<10} {row['folder'] or '-'}")
            if row.get("detail"):
                print(f"{'':<28} {row['detail']}")
            if row["missing"] and row["state"] not in ("missing", "partial"):
                print(f"{'':<28} missing files: {', '.join(row['missing'][:5])}"
                      + (f" (+{len(row['missing']) - 5})" if len(row['missing']) > 5 else ""))
            if row["state"] not in ("present", "partial"):
                print(f"{'':<28} get it: {row['get it']}")
            if row["unpinned"]:
                print(f"{'':<28} not pinned by a digest yet: {len(row['unpinned'])} files (pinned at first download)")
    return 0 if all(row["state"] == "present" for row in rows) else 1


def _cli_verify(args) -> int:
    folder = verified_folder(get(args.name))
    status = verify(args.name, folder)
    states = ("ok", "mismatch", "missing", "absent", "unchecked", "special")
    counts = {s: sum(1 for v in status.values() if v == s) for s in states}
    print(f"{args.name}: {folder}")
    for path, state in status.items():
        if state in ("mismatch", "missing"):
            print(f"{state:<9} {folder / path}")
        elif state == "special":
            print(f"{state:<9} {folder / path}: {file_kind(folder / path)}, not a regular file; not read")
    print(f"{args.name}: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n or s != "special"))
    return 1 if counts["mismatch"] or counts["missing"] or counts["special"] else 0
