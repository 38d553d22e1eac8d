"""``sdr graph embed EDGES… --dim D …``: the command line of :func:`sdr.graph.scale.embed_edge_files`.

Only parsing, output checks and printing; it changes with the command's options and output.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from sdr.graph.pbg import COMPARATOR_METRIC, GraphEmbeddingConfig, check_dimension
from sdr.graph.scale import embed_edge_files
from sdr.outputs import output_file, output_folder


def register(subparsers) -> None:
    """``sdr graph embed EDGES… --dim D [--epochs E] [--comparator dot|cos] [--undirected] [--partitions P]
    [--memory-gb G] [--work-dir DIR] --out F [--force]``."""
    parser = subparsers.add_parser("graph", help="citation-graph embeddings with PyTorch-BigGraph")
    commands = parser.add_subparsers(dest="graph_command", required=True)
    embedding = commands.add_parser(
        "embed", help="embed a citation edge list (TSV, CitationGraph JSONL, S2AG citations, S2ORC metadata)",
        description="Train PyTorch-BigGraph embeddings (SciNCL A.5 settings) of edge files streamed from disk "
                    "(partitioned when the graph does not fit the memory budget) and write "
                    "{'paper_id', 'embedding'} JSONL and/or vectors.npy + ids.txt in --work-dir; prints link "
                    "prediction on the held-out edges.")
    defaults = GraphEmbeddingConfig()
    embedding.add_argument("edges", nargs="+",
                           help="edge files or folders: TSV citing<TAB>cited[<TAB>weight (repeats)], "
                                "CitationGraph JSONL, S2AG citations shards, S2ORC metadata (.gz read as is)")
    embedding.add_argument("--dim", type=int, default=defaults.dimension, help="embedding dimension (768)")
    embedding.add_argument("--epochs", type=int, default=defaults.epochs, help="training epochs (20)")
    embedding.add_argument("--comparator", choices=sorted(COMPARATOR_METRIC), default=defaults.comparator)
    embedding.add_argument("--undirected", action="store_true", help="train on both directions of each edge")
    embedding.add_argument("--lr", type=float, default=defaults.learning_rate, help="learning rate (0.1)")
    embedding.add_argument("--margin", type=float, default=defaults.margin, help="ranking-loss margin (0.15)")
    embedding.add_argument("--test-fraction", type=float, default=defaults.test_fraction,
                           help="edges held out for link prediction (0.01)")
    embedding.add_argument("--seed", type=int, default=defaults.seed)
    embedding.add_argument("--partitions", type=int, default=None,
                           help="PBG num_partitions (default: chosen from the node count and --memory-gb)")
    embedding.add_argument("--memory-gb", type=float, default=None,
                           help="memory budget in GiB (default: half of physical memory)")
    embedding.add_argument("--workers", type=int, default=None,
                           help="PBG HOGWILD worker processes (default: every core for >= 1 M training edges, else 1)")
    embedding.add_argument("--machines", type=int, default=1,
                           help="prepare PBG's distributed mode for this many machines in --work-dir (a folder all "
                                "of them see) and print each machine's torchbiggraph_train command; no training here")
    embedding.add_argument("--init-method", default=None,
                           help="with --machines: the rendezvous every machine reaches, e.g. tcp://RANK0-HOST:29500")
    embedding.add_argument("--work-dir", type=output_folder, default=None,
                           help="keep PBG's files there, with vectors.npy ([N, d] float32), ids.txt and "
                                "embedding.json (settings, report, link prediction) — the folder SciNCL's "
                                "graph_embedding reads (a new or empty folder, or --force; written whole at the end, "
                                "removed on failure)")
    embedding.add_argument("--out", type=output_file, default=None,
                           help="embeddings JSONL to write (required without --work-dir; never one of the inputs)")
    embedding.add_argument("--force", action="store_true", help="replace --out / --work-dir if they exist")
    embedding.add_argument("--json", action="store_true", help="print the report and link prediction as JSON")
    embedding.set_defaults(func=_cli_embed)
    collecting = commands.add_parser(
        "collect", help="read the vectors of a distributed run (sdr graph embed --machines) once every machine finished",
        description="Write DIR/vectors.npy (and --out JSONL) from the checkpoint of a distributed PBG run prepared by "
                    "`sdr graph embed --machines M --init-method URI --work-dir DIR`, with link prediction on its "
                    "held-out edges.")
    collecting.add_argument("distributed_run", metavar="WORK_DIR",
                            help="the distributed run's --work-dir (its vectors.npy and ids.txt are added there)")
    collecting.add_argument("--out", type=output_file, default=None, help="embeddings JSONL to write as well")
    collecting.add_argument("--force", action="store_true", help="replace --out if it exists")
    collecting.set_defaults(func=_cli_collect)


def _cli_collect(args) -> int:
    from sdr.graph.scale import collect_distributed
    from sdr.outputs import Outputs

    outputs = Outputs(inputs={"WORK_DIR": args.distributed_run}, outputs={"--out": args.out}, force=args.force).check()
    result = collect_distributed(args.distributed_run)
    if args.out:
        with outputs.commit() as staged:
            result.save_jsonl(staged["--out"])
    print(f"{Path(args.distributed_run) / 'vectors.npy'}: {len(result.ids)} embeddings of dimension {result.vectors.shape[1]}"
          + ("; link prediction on held-out edges: " + ", ".join(f"{k} {v:.2f}" for k, v in
                                                                 result.link_prediction.items())
             if result.link_prediction else ""))
    return 0


def _cli_embed(args) -> int:
    from sdr.outputs import Outputs

    if args.machines > 1:
        from sdr.graph.scale import prepare_distributed

        if args.work_dir is None:
            raise ValueError("sdr graph embed --machines: give --work-dir DIR, a folder every machine sees")
        config = GraphEmbeddingConfig(dimension=args.dim, epochs=args.epochs, comparator=args.comparator,
                                      undirected=args.undirected, learning_rate=args.lr, margin=args.margin,
                                      test_fraction=args.test_fraction, seed=args.seed, num_partitions=args.partitions,
                                      memory_budget_gb=args.memory_gb, workers=args.workers)
        commands = prepare_distributed(args.edges, config, args.work_dir, args.machines, args.init_method)
        print(f"{args.work_dir}: buckets, entity counts and config.py for {args.machines} machines. Start on each "
              f"machine (rank 0 on the host of {args.init_method}):")
        for command in commands:
            print(f"  {command}")
        print(f"then: sdr graph collect {args.work_dir} [--out F.jsonl]")
        return 0
    if args.out is None and args.work_dir is None:
        raise ValueError("sdr graph embed: give --out F.jsonl, --work-dir DIR or both")
    inputs = {("EDGES" if len(args.edges) == 1 else f"EDGES[{i}]"): path for i, path in enumerate(args.edges)}
    outputs = Outputs(inputs=inputs, outputs={"--out": args.out}, folders={"--work-dir": args.work_dir},
                      force=args.force).check()
    config = GraphEmbeddingConfig(dimension=args.dim, epochs=args.epochs, comparator=args.comparator,
                                  undirected=args.undirected, learning_rate=args.lr, margin=args.margin,
                                  test_fraction=args.test_fraction, seed=args.seed, num_partitions=args.partitions,
                                  memory_budget_gb=args.memory_gb, workers=args.workers)
    check_dimension(config)  # one node's vector must fit the memory budget: refused before any file is read
    written = []
    # PBG's files go to a temporary folder beside --work-dir, renamed into place with --out at the end; a
    # failure or an interrupt removes them (no checkpoints left behind)
    with outputs.commit() as staged:
        result = embed_edge_files(args.edges, config, work_dir=staged.get("--work-dir"))
        if args.out:
            result.save_jsonl(staged["--out"])
    if args.out:
        written.append(str(args.out))
    if args.work_dir:
        written += [str(Path(args.work_dir) / "vectors.npy"), str(Path(args.work_dir) / "ids.txt")]
    if args.json:
        print(json.dumps({"out": written[0], "written": written, "report": asdict(result.report),
                          "link_prediction": result.link_prediction}, indent=2))
    else:
        print(f"{', '.join(written)}: {len(result.ids)} embeddings of dimension {config.dimension}; {result.report}")
        if result.link_prediction:
            print("link prediction on held-out edges: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in result.link_prediction.items()))
    return 0
