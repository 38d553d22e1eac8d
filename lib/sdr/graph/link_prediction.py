"""Link prediction on held-out edges with PBG's own ranking evaluator, the one behind SciNCL Table 5.

Each held-out edge's score is ranked against the corrupted edges built from the other held-out edges of its
batch (``eval_num_batch_negs``) and uniformly drawn nodes (``eval_num_uniform_negs``), on both sides; MRR,
Hits@1, Hits@10 and AUC are reported in percent (:data:`LINK_PREDICTION_METRICS`).

It changes with the evaluation, not with how the embeddings are trained.
"""

from __future__ import annotations

import numpy as np
import torch

from sdr.graph.pbg import _ENTITY, _bucket_key


#: SciNCL Table 5's columns, in its order.
LINK_PREDICTION_METRICS = ("MRR", "Hits@1", "Hits@10", "AUC")


def _edge_list(lhs: np.ndarray, rhs: np.ndarray):
    from torchbiggraph.edgelist import EdgeList
    from torchbiggraph.entitylist import EntityList

    return EdgeList(EntityList.from_tensor(torch.from_numpy(np.ascontiguousarray(lhs, dtype=np.int64))),
                    EntityList.from_tensor(torch.from_numpy(np.ascontiguousarray(rhs, dtype=np.int64))),
                    torch.zeros(len(lhs), dtype=torch.long))


def _link_prediction(pbg_config, test_rows: np.ndarray, num_partitions: int = 1) -> dict[str, float]:
    """PBG's RankingEvaluator on the held-out edges, in-process (no worker pool needed).

    Partitioned: each bucket's test edges are ranked with its lhs and rhs partitions loaded (uniform negatives
    come from the rhs partition, as in PBG's own evaluation); the per-bucket sums are averaged over all edges.
    """
    from torchbiggraph.batching import process_in_batches
    from torchbiggraph.checkpoint_manager import CheckpointManager
    from torchbiggraph.eval import RankingEvaluator
    from torchbiggraph.model import make_model
    from torchbiggraph.stats import Stats
    from torchbiggraph.types import Partition, Side

    manager = CheckpointManager(pbg_config.checkpoint_path)
    model = make_model(pbg_config)
    state_dict, _ = manager.maybe_read_model()
    if state_dict is not None:
        model.load_state_dict(state_dict, strict=False)
    model.eval()
    keys = _bucket_key(test_rows[:, 0], test_rows[:, 1], num_partitions)
    all_stats, loaded = [], {}
    for key in np.unique(keys).tolist():
        lhs_partition, rhs_partition = divmod(key, num_partitions)
        for partition in (lhs_partition, rhs_partition):
            if partition not in loaded:
                if len(loaded) >= 2:  # keep at most two partitions in memory
                    loaded.pop(next(p for p in loaded if p not in (lhs_partition, rhs_partition)))
                loaded[partition] = manager.read(_ENTITY, Partition(partition))[0]
        model.set_embeddings(_ENTITY, torch.nn.Parameter(loaded[lhs_partition]), Side.LHS)
        model.set_embeddings(_ENTITY, torch.nn.Parameter(loaded[rhs_partition]), Side.RHS)
        rows = test_rows[keys == key]
        edges = _edge_list(rows[:, 0] // num_partitions, rows[:, 1] // num_partitions)
        with torch.no_grad():
            all_stats.append(process_in_batches(pbg_config.batch_size, model, RankingEvaluator(), edges))
    manager.close()
    values = Stats.sum(all_stats).average().metrics
    return {"MRR": 100 * values["mrr"], "Hits@1": 100 * values["r1"], "Hits@10": 100 * values["r10"],
            "AUC": 100 * values["auc"]}
