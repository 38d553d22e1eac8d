"""Where every benchmark and corpus lives: one registry, one resolver, one data policy, ``sdr data …``.

One module per reason to change:

* :mod:`~sdr.datasets.registry` — every data set's official source, licence, files and sha256
  (``DATASETS``), and what each chapter reads at ``paper`` (``CHAPTER_DATA``, ``CHAPTER_MODELS``);
* :mod:`~sdr.datasets.download` — ``$SDR_DATA`` → cache → download (:func:`resolve`, :func:`fetch`,
  :func:`fetch_any`, :func:`fetch_model`), atomic downloads, :class:`DatasetUnavailable`;
* :mod:`~sdr.datasets.lock` — file digests and ``data/datasets.lock.json``, which pins first downloads;
* :mod:`~sdr.datasets.status` — :func:`verify`, :func:`status_table`, :func:`chapter_status`;
* :mod:`~sdr.datasets.policy` — the one data policy (:class:`ChapterData`: smoke replicas, real if found,
  paper real only — fetched or one stop before training), :func:`forbid_replica`, :func:`dry_run`;
* :mod:`~sdr.datasets.cli` — ``sdr data list/fetch/status/verify``.

Every name is re-exported here, so ``from sdr.datasets import ChapterData`` and ``datasets.resolve(...)``
read as before. Code never hard-codes a data path, and nothing here copies data into the repository.
"""

from sdr.datasets.registry import (
    ACADEMIC_PHRASEBANK, ACL_ARC, BULK_ROUTE, CFS3, CF_SENTENCES, CHAPTER_DATA, CHAPTER_MODELS, CSABSTRUCT,
    CSFCUBE_COMMIT, S2AG_BULK_FLEW, S2AG_BULK_THESIS, S2AG_BULK_WOL_TEXTS, S2ORC_CITATION_GRAPH, SAME_LAYOUT_AS,
    REAL_PROFILE_DATA,
    CSFCUBE_READABLE_SHA256, CSFCUBE_REPO, CSFCUBE_SHA256, CSFCUBE_SPECTER_POOLS_SHA256, DATASETS, DataFile,
    Dataset, FLEW_SPLIT_METADATA, FLEW_TRIPLETS, MDCR, PUBMED_RCT, S2AG_CITATIONS_FLEW, S2ORC_SAMPLE, S2ORC_SPECTER,
    S2_CITATIONS_THESIS, SCICITE, SCICITE_FULL, SCIDOCS, SCIDOCS_SPECTER_EMBEDDINGS, SCIREPEVAL,
    SCIREPEVAL_CITE_PREDICTION, SCIREPEVAL_FULL,
    SPECTER_SAMPLE, SPECTER_TRAINING, SPECTER_WOL, fetch_command, get, paper_files,
)
from sdr.datasets.lock import (check_against_lock, expected_digest, git_blob_sha1, lock_entry, lock_path, pin,
                               read_lock, sha256_of)
from sdr.datasets.download import (
    DOWNLOAD_TIMEOUT_S, DatasetUnavailable, cache_dir, data_root, fetch, fetch_any, fetch_model, fetch_state,
    is_complete, locate, offline, partial_folder, resolve,
)
from sdr.datasets.status import chapter_status, paper_data_markdown, status_table, verified_folder, verify
from sdr.datasets.policy import (
    ChapterData, DRY_RUN_ENV, DataInput, PaperDataMissing, Policy, REAL_IF_FOUND, REAL_ONLY, REPLICA,
    ReplicaForbidden, activate, active_policy, dry_run, forbid_replica, policy_for,
)
from sdr.datasets.cli import check_fetch_targets, register

__all__ = [
    # registry
    "ACADEMIC_PHRASEBANK", "ACL_ARC", "BULK_ROUTE", "S2AG_BULK_FLEW", "S2AG_BULK_THESIS", "S2AG_BULK_WOL_TEXTS",
    "S2ORC_CITATION_GRAPH",
    "SAME_LAYOUT_AS", "CFS3", "CF_SENTENCES", "CHAPTER_DATA", "CHAPTER_MODELS", "CSABSTRUCT",
    "CSFCUBE_COMMIT", "CSFCUBE_READABLE_SHA256", "CSFCUBE_REPO", "CSFCUBE_SHA256", "CSFCUBE_SPECTER_POOLS_SHA256",
    "DATASETS", "DataFile", "Dataset", "FLEW_SPLIT_METADATA", "FLEW_TRIPLETS", "MDCR", "PUBMED_RCT", "S2AG_CITATIONS_FLEW", "S2ORC_SAMPLE",
    "S2ORC_SPECTER", "S2_CITATIONS_THESIS", "SCICITE", "SCICITE_FULL", "SCIDOCS", "SCIDOCS_SPECTER_EMBEDDINGS",
    "SCIREPEVAL",
    "SCIREPEVAL_CITE_PREDICTION", "SCIREPEVAL_FULL", "SPECTER_SAMPLE", "SPECTER_TRAINING", "SPECTER_WOL",
    "fetch_command", "get", "paper_files",
    # lock
    "check_against_lock", "expected_digest", "git_blob_sha1", "lock_entry", "lock_path", "pin", "read_lock",
    "sha256_of",
    # download
    "DOWNLOAD_TIMEOUT_S", "DatasetUnavailable", "cache_dir", "data_root", "fetch", "fetch_any", "fetch_model",
    "fetch_state", "is_complete", "locate", "offline", "partial_folder", "resolve",
    # status
    "chapter_status", "paper_data_markdown", "status_table", "verified_folder", "verify",
    # policy
    "ChapterData", "DRY_RUN_ENV", "DataInput", "PaperDataMissing", "Policy", "REAL_IF_FOUND", "REAL_ONLY", "REPLICA",
    "ReplicaForbidden", "activate", "active_policy", "dry_run", "forbid_replica", "policy_for",
    # cli
    "check_fetch_targets", "register",
]
