"""Where every benchmark and corpus lives: one registry, one resolver, ``sdr data fetch|list|verify``.

``DATASETS`` maps a name to its official source (repository at a commit, or the URL its README gives),
licence, the files expected in its folder, and the sha256 of each file where the bytes are known
(computed from the shared mirror; digests are not the data). Code never hard-codes a data path; it
calls :func:`resolve`, whose lookup order is

1. ``$SDR_DATA/<folder>`` (the shared read-only mirror, what the tests use),
2. the cache ``$SDR_DATA_CACHE/<folder>`` or ``~/.cache/sdr/<folder>``,
3. a download into the cache (``urllib``; files are checked against their sha256),

and, when all three fail (offline and missing), raises :class:`DatasetUnavailable` with one line
saying what to set. Nothing here copies data into the repository.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from tqdm.auto import tqdm

DOWNLOAD_TIMEOUT_S = 60


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset folder: where it comes from and what its bytes hash to."""

    path: str  # relative to the dataset folder
    url: str | None = None  # official download URL (None: no direct link, see Dataset.manual)
    sha256: str | None = None  # known digest, checked after download and by `sdr data verify`
    required: bool = True  # needed for the dataset to count as present
    archive: bool = False  # a .tar.gz / .zip to unpack into the folder after download
    paper: bool = False  # an optional file that a `paper` run reads too (fetched before it starts)


@dataclass(frozen=True)
class Dataset:
    """A registry entry. ``expected`` lists paths that must exist for a folder to count as present
    (default: the required non-archive files; an archive-only entry needs a non-empty folder)."""

    name: str
    folder: str
    description: str
    licence: str
    source: str
    files: tuple[DataFile, ...] = ()
    manual: str = ""  # how to obtain files that have no direct URL
    expected: tuple[str, ...] = field(default=())
    label: str = ""  # the short name a page's caption gives (default: name)
    fetcher: str = ""  # a module of sdr.fetchers that builds the folder from an API (no file URLs)
    size: str = ""  # the download size, stated before a download starts (e.g. "4.6 GiB")

    def expected_paths(self) -> tuple[str, ...]:
        if self.expected:
            return self.expected
        return tuple(f.path for f in self.files if f.required and not f.archive)


class DatasetUnavailable(FileNotFoundError):
    """A dataset is in neither ``$SDR_DATA`` nor the cache and could not be downloaded."""


def _github(repo: str, commit: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


# --------------------------------------------------------------------------- the registry

CSFCUBE_REPO, CSFCUBE_COMMIT = "iesl/CSFCube", "7ffe012c1d92c470f185fc086086caf5b8e05ef3"
CSFCUBE_SHA256 = {
    "queries-release.csv": "6890b27986abe880129ca33ebd3f0f3e205fda086d57617fd4c2bd464ec3f1aa",
    "evaluation_splits.json": "1d23a1b2110e874809c9516f65c70e3c6e4b8fe3bd748ff36ff05c4875226c88",
    "test-pid2anns-csfcube-background.json": "2015cbf965377374e020b0ec133351ec1feb731b9a9c40da0e446ef6eee4fa5e",
    "test-pid2anns-csfcube-method.json": "4d9b48f4b6a7a4fc24a30e0c0e74d1cc53eb4214ec4b855e3cd98e86829323a2",
    "test-pid2anns-csfcube-result.json": "5ed7a63bc20e3deb725f8ec82abfcb1c5d79673befc942509b48effceb3be031",
    "test-pid2pool-csfcube.json": "e2e3585e0a497d1d0effe12fd97b82c9626a44487954547a7efd30268aa72add",
}
CSFCUBE_SPECTER_POOLS_SHA256 = {
    "background": "903b2c0814ddde157ee682ad242f1f8edd8e80b25c3dbb51944d10fbb1ad0e3b",
    "method": "f1055e4572b2e1154582469db410a328c18fc01522b9f30b34bbf40fd2542955",
    "result": "a0040df699b374e42e1f557e3c5f4081f745ad98bb6a24dd32642d1eed4cf05c",
}
CSFCUBE_READABLE_SHA256 = {
    "10010426-method-adju.txt": "882295e6263176e829c72c0a0dceec92ef443c80866e1ffafd95b710b12a5d64",
    "10014168-background-adju.txt": "41178eb38debcb6862d3ee24e37c39b6ebd3cb3b720167049d578265a7c0148f",
    "10052042-result-adju.txt": "4c70e502d8222c39a35ef3bd0fe5941a2472f7ea7fd937beceb2d61d669078f2",
    "102353905-method-adju.txt": "a9d9e50c6fae1c521c7122883da82efa5d01f396b6e4d07755292e4f5b104971",
    "10695055-background-adju.txt": "08d156c492f7a9374f9f7bd3f6748cc7a730a7a337532f4365e8cc30aa8242f0",
    "11310392-method-adju.txt": "b6315b559d40b6ffdec86685b603c3ac0312cfeed6b3cd22ba127f07bdc9b48f",
    "11629674-result-adju.txt": "f4a5080e6290b92b7b26b1c0f081e9729cfcd733b2465a030ba78e5b8337d027",
    "11844559-background-adju.txt": "f734c790c4248cf47f5d747dbab59b8db338cbb6b4d6b021858a5e41ca88ce6f",
    "11844559-result-adju.txt": "e2a63866f77db9cebc5b440f53ef99cc3db6b87f9a14dbf3f4c3553fbbcbf379",
    "1198964-method-adju.txt": "5bf9ea7651f5b2c79c736cff55dcca8288a3ed224779bf07352a00d6c10baa14",
    "1198964-result-adju.txt": "254cd72b39e6fbdc7416fbb29b0aaa85c685d4b7d6a365a629c87644d0d32607",
    "1306065-result-adju.txt": "c98d7f4c56d7df54fd0b33b72fc57895b165b0a7e01eb44fa7bf6c09734a0129",
    "13949438-method-adju.txt": "d5c1d5ba7b874978859e00972945e7e61c7871c1c89f8f4ed4eb839159b86fb6",
    "1587-background-adju.txt": "652f2d5f3866dec2c96c7d5fc1a947d38c367686ea2a98e3afc4e8fb1c019eb2",
    "1587-result-adju.txt": "f62785c4b18fa3015c1b1d4dbc514ba5b25cc4bbbb055bc16b338bda865a255c",
    "174799296-method-adju.txt": "a0333ddc3de5df139ed10452e57a72809958d952dca5d8a834c8c0b7f9d5b5bc",
    "174799296-result-adju.txt": "5d72a8f89678102aee85c1d5fd7bb65bd839ead97779f6d4379f1f6794a681af",
    "1791179-background-adju.txt": "3ab001d90441cd16ef110ce8b2d270eaf2f1ef0a90b4aeb6f3abbe2d24474368",
    "1791179-method-adju.txt": "50a5d0ac37793a59fb62da029347b1412044e74523b5782ad8820e48a80e6600",
    "189897839-background-adju.txt": "68fd65c1203afcd1013ba5bb0cc76b54379f1fb156d36e91b0932d1e8f0d715f",
    "189897839-method-adju.txt": "26da00c8ba5a33d582bc568bb3eeed9472965994cda005d15a774a4bd11d712a",
    "1936997-background-adju.txt": "e68e88a7061031c1192544a1439fca2c4a30cbd792fafa8c9dafeee2e3d31feb",
    "1936997-method-adju.txt": "44d41cf236f2379dbb4f3f16b94a475391292e195f5614b24d900a60d0963c48",
    "2090262-result-adju.txt": "a8f7f4c02d59c0aaf0f44754d934c6922baec188775f2c651a0ded97b9ad5006",
    "2360770-result-adju.txt": "7ae1e8de77cfdd3f73cd28175bb3d34d94bc5939ce1d4c6e4444d66ad78db7a7",
    "2468783-method-adju.txt": "b53b78925724192543bae9bd857518894b748257d57829be613fcc5abfaa45ed",
    "2468783-result-adju.txt": "56598dc7a347c3e2fa6bbcd07141598ddb55faddfa8efada08d2ebfbc69387ce",
    "2865563-result-adju.txt": "277dee687b56b5c767cf11efa33cc8fa08ca0126f1ddb9bfac2c34d67fa0b0c6",
    "3264891-background-adju.txt": "bacb81224cdf9db12e5b9849c46ebba16213ce23dfc3517a883788e5b9ea47e7",
    "3264891-result-adju.txt": "c5cfb5fc8dfe1f132e2ab6cf8782d6993ddb28576c266e78e045d4445e86ac3c",
    "5052952-method-adju.txt": "04e2dabd85519ae4488b50ba81a6282b68b3bb416c5edb36f934d437ac232571",
    "5052952-result-adju.txt": "55c70c073117a712ca16d72807bde40f9b10c8e2fe5b21b8fcddc402da69b3b0",
    "51977123-background-adju.txt": "2dadc162180032b14c95b5f99b31e0f46f2ea20faba7439917bf3ca771ff39ad",
    "52194540-background-adju.txt": "3e3a9eaf17e388498477de1e4cf6189f149b87cd13b978b61d11f7570a15e5b6",
    "52194540-method-adju.txt": "49e040684ecf406f3d94c61db3e4f7450dd5c357bca09e59dc108fc61165abc6",
    "5270848-method-adju.txt": "e5ba4f11e0c4f30f3f8141fdd1630fcb62de715cd2998c4f8236ee86430d3a64",
    "53080736-method-adju.txt": "7e33656fada2fef35fecbb188d29d5dbe442c59844301bfd859e9c14c239071c",
    "53080736-result-adju.txt": "6c4646b372ed5dff5482e36dfe66d3564a58c26010e37cee5c7165bdeca5fcc8",
    "53082542-method-adju.txt": "4dc8c1060d58d06bbb9e9836c6951c5026f6e0784de5991bfddda999231fb9bc",
    "5764728-background-adju.txt": "22abfd3a0ec8f82c8f55d9e406fc87ecd6e8d95440bc62d65f5d14a668c05f0f",
    "6173686-background-adju.txt": "d9a18fc1c890f7e63344875bd52edcae6143f6932ea6d51421285a8724bb1a75",
    "6431039-background-adju.txt": "512afb627016b9c0c67fb91f0d20b9ca649f309864a3db34c98afecd8e3bdbf5",
    "6431039-result-adju.txt": "8cb642f008fa044f5137b69a4f549b13affd232f32bdbfc3c154d1ff8af9e56a",
    "7898033-background-adju.txt": "39b8a5e0131f70580d4f0266b25c63ae863a6d231217747ac11789c3882f8a7c",
    "80628431-method-adju.txt": "f67a92a84df546b8dfaeb5addc08ba4ec9e1f60508a6880ac0aeb624cbea9b84",
    "80628431-result-adju.txt": "301d94f96dadde2983c85111a1577b1dd09693088e3678e507f519e2870504ed",
    "8781666-background-adju.txt": "f04eec4923bcbfff325e7b69c837889ec6028db0e7b21974849a1d76908f9e2a",
    "8781666-result-adju.txt": "5358d8e443ea3119634195118c69b950ac4b2ca7fb09dce6efe6e6bae402658c",
    "929877-background-adju.txt": "4168ced6153e7f484a05e740897100c97813b6e85a30a4603e8d52ec914df343",
    "929877-method-adju.txt": "3d5200c2360515f02342641a1e9644e5c80821f25a522f54c4a4aeb6a3d1e2f2",
}


def _csfcube() -> Dataset:
    files = [DataFile(p, _github(CSFCUBE_REPO, CSFCUBE_COMMIT, p), h) for p, h in CSFCUBE_SHA256.items()]
    for facet, digest in CSFCUBE_SPECTER_POOLS_SHA256.items():
        path = f"eval_scripts/sample_ranked_pools/test-pid2pool-csfcube-specter-{facet}-ranked.json"
        files.append(DataFile(path, _github(CSFCUBE_REPO, CSFCUBE_COMMIT, path), digest, required=False, paper=True))
    for name, digest in CSFCUBE_READABLE_SHA256.items():
        path = f"readable_annotations/{name}"
        files.append(DataFile(path, _github(CSFCUBE_REPO, CSFCUBE_COMMIT, path), digest))
    files.append(DataFile("abstracts-csfcube-preds.jsonl",
                          _github(CSFCUBE_REPO, CSFCUBE_COMMIT, "abstracts-csfcube-preds.jsonl"), required=False))
    structure = (*CSFCUBE_SHA256, "readable_annotations")  # the annotation files' names depend on the queries
    return Dataset(
        expected=structure,
        name="csfcube",
        folder="csfcube",
        description="CSFCube faceted query-by-example test collection (50 query-facet pairs, graded pools)",
        licence="CC BY-NC 4.0",
        source=f"https://github.com/{CSFCUBE_REPO} @ {CSFCUBE_COMMIT}",
        files=tuple(files),
        manual="the 800k background abstracts: "
               "https://figshare.com/articles/dataset/abstracts-preds_zip/14796339",
    )


def _simple(name, folder, description, licence, repo, commit, paths, sha256=None, optional=(), manual="",
            paper=()):
    """An entry whose files are raw GitHub blobs: ``paths`` maps local path → path in the repository;
    ``paper`` lists the optional files a ``paper`` run reads too."""
    sha256 = sha256 or {}
    files = tuple(
        DataFile(local, _github(repo, commit, remote), sha256.get(local), required=local not in optional,
                 paper=local in paper)
        for local, remote in paths.items()
    )
    return Dataset(name, folder, description, licence, f"https://github.com/{repo} @ {commit}", files, manual)


CSABSTRUCT = _simple(
    "csabstruct", "csabstruct",
    "CSAbstruct: sentence-level discourse labels of CS abstracts (one abstract per JSONL line)",
    "Apache-2.0", "allenai/sequential_sentence_classification", "cf5ad6c663550dd8203f148cd703768d9ee86ff4",
    {f"{s}.jsonl": f"data/CSAbstruct/{s}.jsonl" for s in ("train", "dev", "test")},
    sha256={
        "train.jsonl": "0d184597fc87640e0a51d439ed3e3ccff68a28125da6151a3e86005b202829b1",
        "dev.jsonl": "37d8fc9a932516b290afacd4d294111141ce31c503260de8be145bd4b28d62f5",
        "test.jsonl": "de6dfac6e8efed842b45764b1b1c551d72d14da849022544bba95a8a1dcc09cc",
    },
)

PUBMED_RCT = _simple(
    "pubmed_rct", "pubmed_rct",
    "PubMed 20k RCT (sentence roles in RCT abstracts; SciToricsBERT's Table 2 count of 30,135 "
    "sentences is the 20k test split)",
    "no explicit licence (MEDLINE/PubMed based)", "Franck-Dernoncourt/pubmed-rct",
    "17ed2cb0590decfca0266add0c76f254f67232b4",
    {f"{s}.txt": f"PubMed_20k_RCT/{s}.txt" for s in ("train", "dev", "test")},
    optional=("train.txt", "dev.txt"),
)

SCICITE = Dataset(
    name="scicite",
    folder="scicite",
    description="SciCite citation intents, dev and test splits (+ the official 10-record fixtures)",
    licence="code Apache-2.0 (allenai/scicite); no licence file in the mirror repository",
    source="https://github.com/akanshaj107/CitationIntentClassifier @ a7ba283796b267658a508f93b382b321c5019ae3",
    files=(
        DataFile("dev.jsonl", _github("akanshaj107/CitationIntentClassifier",
                                      "a7ba283796b267658a508f93b382b321c5019ae3", "data/scicite/dev.jsonl"),
                 "0da66e583273fe6de50fd91ab586bb7118e77044be2824e4b89472a24858bbef"),
        DataFile("test.jsonl", _github("akanshaj107/CitationIntentClassifier",
                                       "a7ba283796b267658a508f93b382b321c5019ae3", "data/scicite/test.jsonl"),
                 "e35f6f92ed45f75d7c75e56bb0d5aec3bb8134363c384894916f5c9770fa53a6"),
        *(
            DataFile(f"fixtures/{n}", _github("allenai/scicite", "b33a8cd0df5743c9d483b1d0fdce8ec62bc8f135",
                                              f"tests/fixtures/{n}"), h, required=False)
            for n, h in {
                "scicite-train.jsonl": "635266165444df8288abcf18842221b135372da348e9fc2beba16aefbbe41981",
                "aclarc-train.jsonl": "42c5e0a337d76fe000a7469b3421bff13825120d7a7aa4e983b36e1f6ad2023b",
                "scicite-section-title.jsonl": "a531445deb6b3abf6d020d38de122d67acaadc88d9a5630c5eaab8dc2bec8e34",
                "scicite-cite-worthiness.jsonl": "fd21e1ed8516aa88ba17e1bc09a814b4b57fde2cd0c7ecb95f4e9bfcc8b9b30a",
                "aclarc-section-title.jsonl": "cbfcaa6ccd9b930503fe454aac5b0aa95ea813ac551d45294fcdf8a17dc95007",
                "aclarc-cite-worthiness.jsonl": "f1e0d04701db1ec002c534987d04110f3fd2021333164985f1e08324371cbc60",
            }.items()
        ),
    ),
    manual="the train split is in scicite_full (the official tarball)",
)

SCICITE_FULL = Dataset(
    name="scicite_full",
    folder="scicite_full",
    description="SciCite, all splits and scaffolds: the official tarball from allenai/scicite's README",
    licence="see https://github.com/allenai/scicite",
    source="https://github.com/allenai/scicite (README: scicite.tar.gz, 22.1 MB)",
    files=(DataFile("scicite.tar.gz", "https://s3-us-west-2.amazonaws.com/ai2-s2-research/scicite/scicite.tar.gz",
                    archive=True),),
)

ACL_ARC = Dataset(
    name="acl_arc",
    folder="acl_arc",
    description="ACL-ARC citation intents (Jurgens et al. 2018), AllenAI's preprocessed release",
    licence="see https://github.com/allenai/scicite",
    source="https://github.com/allenai/scicite (README: ACL-ARC data)",
    files=(DataFile("acl-arc.tar.gz", "https://s3-us-west-2.amazonaws.com/ai2-s2-research/scicite/acl-arc.tar.gz",
                    archive=True),),
)

S2ORC_SAMPLE = _simple(
    "s2orc_sample", "s2orc", "S2ORC metadata sample (1,000 papers)",
    "ODC-By 1.0 (the original release was non-commercial)", "allenai/s2orc",
    "ac522b5282520d330c433ee6908a4a08f4c33950", {"metadata/sample.jsonl": "data/metadata/sample.jsonl"},
    sha256={"metadata/sample.jsonl": "83d3a385c7e2a2da27879f6b7a352cc904564d9e19bf049e8ff2bb13b9c2cc0b"},
)

SPECTER_SAMPLE = _simple(
    "specter_sample", "specter", "SPECTER's tiny training-data and embedding-input samples",
    "Apache-2.0", "allenai/specter", "f7afbc9cff79d487f6529a4b5802f10ed666df94",
    {p: f"data/{p}" for p in ("training/data.json", "training/metadata.json", "training/train.txt",
                              "training/val.txt", "training/test.txt", "sample-metadata.json", "sample.ids")},
    sha256={
        "training/data.json": "560ea5f1b86e48785e85cdf5e790df50cb191d9d736aaff454f90655cfed643f",
        "training/metadata.json": "f691e455a489315e105b3f46daff2f51a05c8d2cb563da1e8122efd0d6da3f0a",
        "training/train.txt": "e3a0758378da58949477418f064a08eb0ca3cdf7ed414fcc5249fb29418374c5",
        "training/val.txt": "12dad8f7964d593395498533bd7f11e50e9a9d22bfff11e56afbd619b5e067e4",
        "training/test.txt": "07cab67a09345daa3a3da3a1e6b2897f85e9a4f1cdd458b47c16e419d41ba0c2",
        "sample-metadata.json": "ec03fe361cce2e29dcfd4139944e7c24d571d3699274fd50051965f14365d3e5",
        "sample.ids": "7876b25902bc48f2ffdfe0060e59d4832ad6690dd4d941855641376e084a4f6d",
    },
)

SPECTER_TRAINING = Dataset(
    name="specter_training",
    folder="specter_training",
    description="SPECTER's original training triplets (train.pkl), as linked from malteos/scincl's README",
    licence="Apache-2.0 (allenai/specter)",
    source="https://github.com/malteos/scincl (README)",
    files=(DataFile("train.pkl",
                    "https://ai2-s2-research-public.s3-us-west-2.amazonaws.com/specter/training-data/train.pkl"),),
)

_SCIREPEVAL_SAMPLES = ("specter_small.json", "fos_small.json", "fos_labels.txt", "mesh_small.json",
                       "mesh_descriptors.txt", "s2and_small.json", "search_small.jsonl")
SCIREPEVAL = _simple(
    "scirepeval", "scirepeval", "SciRepEval task registry and training-data samples",
    "code Apache-2.0; benchmark ODC-BY", "allenai/scirepeval", "e04594e6401cb68fb4ddf6daa801fb219cccc0bb",
    {"scirepeval_tasks.jsonl": "scirepeval_tasks.jsonl",
     **{f"sample_data/{n}": f"training/sample_data/{n}" for n in _SCIREPEVAL_SAMPLES}},
    sha256={
        "scirepeval_tasks.jsonl": "14324b7fddb37bc9a33a27e945680b4c243ae9f2567190e7c34c0bf21eb4a888",
        "sample_data/specter_small.json": "f4f3545bcb0fcfb73b38cd2140df70fcf7e9181d0e605275a8523959f2cfb75a",
        "sample_data/fos_small.json": "4054f2ea4854eb705c5e3e9521922c4a0f0c5e6a1b733c07172ffcaad90b495c",
        "sample_data/fos_labels.txt": "39e0ed5fc55d5218f1df34cbedefdb56277286171d71e88e1f30235bf24ae8ff",
        "sample_data/mesh_small.json": "2e5d2200c8fd475c9d744d6e3ecb6e756f04143619bd7b198dcddd597872b19e",
        "sample_data/mesh_descriptors.txt": "014b069fc5cb6f55b9162bfc7270ff73eafa85105fe3a046efda0fc16d8320c8",
        "sample_data/s2and_small.json": "a5808983f1b5669905cd9f18b3fef9cb64399eac7f0c3a0e0e1fbaffb4f6cbdf",
        "sample_data/search_small.jsonl": "437dd854f721f627a2361c6b01893d6f1bfb4b946e823520243a82c9cf7525bf",
    },
    optional=tuple(f"sample_data/{n}" for n in _SCIREPEVAL_SAMPLES),
    manual="the full benchmark: Hugging Face datasets allenai/scirepeval and allenai/scirepeval_test "
           "(see scirepeval_full)",
)

SCIREPEVAL_FULL = Dataset(
    name="scirepeval_full",
    folder="scirepeval_full",
    description="SciRepEval evaluation sets: every Hugging Face dataset config its task registry reads, exported as "
                "JSONL (<repo>/<config>/<split>.jsonl)",
    licence="ODC-BY",
    source="https://huggingface.co/datasets/allenai/scirepeval_test and allenai/scirepeval (the Hub's parquet export)",
    manual="`sdr data fetch scirepeval_full` (the Hugging Face Hub's parquet exports of the configs the registry names)",
    expected=("scirepeval_tasks.jsonl",),
    fetcher="huggingface",
    size="~ 4 GB",
)

_SCIDOCS_BASE = "https://ai2-s2-research-public.s3-us-west-2.amazonaws.com/specter/scidocs"
_SCIDOCS_FILES = (
    *(f"{task}/{split}.qrel" for task in ("cite", "cocite", "coread", "coview") for split in ("val", "test")),
    *(f"{task}/{split}.csv" for task in ("mag", "mesh") for split in ("train", "val", "test")),
    "paper_metadata_mag_mesh.json",
    "paper_metadata_view_cite_read.json",
)
_SCIDOCS_RECOMM = ("recomm/train.csv", "recomm/val.csv", "recomm/test.csv",
                   "recomm/train_similar_papers_model.json", "recomm/propensity_scores.json",
                   "paper_metadata_recomm.json")
SCIDOCS = Dataset(
    name="scidocs",
    folder="scidocs",
    description="SciDocs (SPECTER's evaluation suite): MAG, MeSH, co-view, co-read, cite, co-cite, recommendations",
    licence="CC BY 4.0",
    source="https://github.com/allenai/scidocs @ ebf239d30d70062b4111f9e3a8efe2b3d3f3d303 "
           "(data: s3://ai2-s2-research-public/specter/scidocs/)",
    files=(
        *(DataFile(p, f"{_SCIDOCS_BASE}/{p}") for p in _SCIDOCS_FILES),
        # the evaluator reads every recommendation file but the ranker's config (its values are in sdr.evaluate)
        *(DataFile(p, f"{_SCIDOCS_BASE}/{p}", required=False, paper=not p.endswith("_model.json"))
          for p in _SCIDOCS_RECOMM),
    ),
    manual="or `aws s3 sync --no-sign-request s3://ai2-s2-research-public/specter/scidocs/ "
           "$SDR_DATA_CACHE/scidocs/` (4.6 GiB with embeddings)",
)

MDCR = Dataset(
    name="mdcr",
    folder="mdcr",
    description="MDCR multi-domain citation recommendation (per MAG field, candidate lists by source)",
    licence="no licence file in zoranmedic/mdcr",
    source="https://github.com/zoranmedic/mdcr @ bdaae790592ddc372cebd5791290318e4718f1c1 (README links)",
    files=(
        DataFile("mdcr_val.json", "https://takelab.fer.hr/data/mdcr/mdcr_val.json"),
        DataFile("mdcr_test.json", "https://takelab.fer.hr/data/mdcr/mdcr_test.json"),
        # the papers' titles and abstracts (~250 MB each): what an encoder embeds, so a paper run reads them
        DataFile("mdcr_val_data.jsonl", "https://takelab.fer.hr/data/mdcr/mdcr_val_data.jsonl", required=False,
                 paper=True),
        DataFile("mdcr_test_data.jsonl", "https://takelab.fer.hr/data/mdcr/mdcr_test_data.jsonl", required=False,
                 paper=True),
    ),
)

CFS3 = _simple(
    "cfs3", "cfs3", "CFS3: 100,016 sentences labelled with communicative functions by n-gram distant supervision",
    "CC BY-NC 4.0", "Alab-NII/CFS3", "7d24387358fb7c6a0fd6b5b28dd7c4ebc725bec2",
    {n: n for n in ("CFS3.jsonl", "CFS3_train.jsonl", "CFS3_valid.jsonl", "5gram_dict.json")},
    optional=("CFS3_train.jsonl", "CFS3_valid.jsonl", "5gram_dict.json"),
    paper=("CFS3_train.jsonl", "CFS3_valid.jsonl", "5gram_dict.json"),
)

CF_SENTENCES = Dataset(
    name="cf_sentences",
    folder="cf_sentences",
    description="CF-labelled sentence dataset (Iwatsuki & Aizawa 2021): "
                "sentence-dataset/{train,eval}.{Chem,CL,Onc,Psy}.{introduction,methods,results,discussion}",
    licence="see https://iwa2ki.com/FE/",
    source="https://iwa2ki.com/FE/ (linked from kaisugi/rhetorical_aspect_embeddings)",
    manual="download NERdepparseLMI from https://iwa2ki.com/FE/ and place its sentence-dataset/ folder "
           "under $SDR_DATA_CACHE/cf_sentences/",
    expected=("sentence-dataset",),
)

ACADEMIC_PHRASEBANK = _simple(
    "academic_phrasebank", "academic_phrasebank",
    "Academic Phrasebank phrase lists (80 communicative functions; research lookup only, © Univ. of Manchester)",
    "© The University of Manchester; no licence for redistribution", "wlsdn2749/academic_phrasebank_crawler",
    "aea286e25cafe9a2b71861d806fb064901068b49",
    {f"{n}.json": f"{n}.json" for n in ("introducing-work", "referring-to-sources", "describing-methods",
                                         "reporting-results", "discussing-findings", "writing-conclusions")},
    sha256={
        "introducing-work.json": "597d75a94443609005d73fa71044291f30ffc809850a83ffab39cf70971b1c0f",
        "referring-to-sources.json": "4653d7296687c9ae168e4ed1f739b1ea44a2bb31c658c51904a284d3320eaaac",
        "describing-methods.json": "bd53796f3bacc84d1ec08b1177261ff7f3936e512f2141669ed34209ce02b50e",
        "reporting-results.json": "874925151be012f8329fac322df921f7321ed16a2a75cdf0017c71e43245ce1d",
        "discussing-findings.json": "3269826d7a8de4a91b6e5aa04deb0421240550ea8e97fb8462806ba099192cb8",
        "writing-conclusions.json": "b37a4e469b548bff6d0d216ee6ef7985ae758a1765176b83aeef7738b5ed2a5c",
    },
)

# SciRepEval's README: `aws s3 sync --no-sign-request s3://ai2-s2-research-public/scirepeval/train train`;
# training/sample_data/tasks_config.json reads the SPECTER task from train/cite_prediction/train.jsonl.
SCIREPEVAL_CITE_PREDICTION = Dataset(
    name="scirepeval_cite_prediction",
    folder="scirepeval_cite_prediction",
    description="SPECTER's training triplets as SciRepEval's cite_prediction training config "
                "(query/pos/neg JSONL, the layout of scirepeval/sample_data/specter_small.json)",
    licence="ODC-BY",
    source="s3://ai2-s2-research-public/scirepeval/train/cite_prediction (allenai/scirepeval README and "
           "training/sample_data/tasks_config.json); also Hugging Face allenai/scirepeval, config cite_prediction",
    files=(DataFile("train.jsonl", "https://ai2-s2-research-public.s3-us-west-2.amazonaws.com/scirepeval/train/"
                                   "cite_prediction/train.jsonl"),),
)

# SciNCL's SPECTER training triples without SciDocs leakage (its Table 4 "w/o leakage"); their query papers are
# the anchors the thesis fetched from the Semantic Scholar API (Bansal §4.3: "the same anchor documents used by
# SciNCL (i.e., SPECTER without leakage)").
SPECTER_WOL = Dataset(
    name="specter_wol",
    folder="specter_wol",
    description="SPECTER's training triples without SciDocs leakage, as SciNCL released them (query, positive, "
                "negative S2 paper ids)",
    licence="MIT (malteos/specter-wol)",
    source="https://huggingface.co/malteos/specter-wol (specter-wol__train_triples.csv)",
    files=(DataFile("specter-wol__train_triples.csv",
                    "https://huggingface.co/malteos/specter-wol/resolve/main/specter-wol__train_triples.csv"),),
    label="SPECTER w/o leakage triples (malteos/specter-wol)",
    size="18.5 MB",
)

S2_CITATIONS_THESIS = Dataset(
    name="s2_citations_thesis",
    folder="s2_citations_thesis",
    description="Semantic Scholar references and citations with intents and contexts of the thesis' anchor papers "
                "(SciNCL's w/o-leakage queries) and the references of their references (Bansal §4.3)",
    licence="Semantic Scholar API licence agreement (ODC-BY data)",
    source="Semantic Scholar Graph API /paper/{id}/references and /citations "
           "(fields contexts, intents, contextsWithIntent, isInfluential, title, abstract)",
    manual="`sdr data fetch s2_citations_thesis` with S2_API_KEY set (about 1 request per second: the anchors' "
           "pages and their references' pages take days; the fetch resumes where it stopped)",
    expected=("references.jsonl", "citations.jsonl", "papers.jsonl"),
    label="Semantic Scholar citations with intents (thesis anchors)",
    fetcher="semantic_scholar",
)

# FLeW's released training data (the paper's footnote 1: huggingface.co/collections/Miracle-dz/flew-…): per facet
# the sampled triplets as S2 corpus ids (query_paper_id,positive_id,negative_id; 10 per query), and the triplet
# papers' metadata (full and split abstracts, 1.6-4.5 GB a file; not fetched: the chapter reads texts from S2).
_FLEW_DATA = "https://huggingface.co/datasets/Miracle-dz/FLeW-data/resolve/main"
FLEW_TRIPLETS = Dataset(
    name="flew_triplets",
    folder="flew_triplets",
    description="FLeW's released training triplets per facet (S2 corpus ids; query_paper_id, positive_id, "
                "negative_id): the paper's one query list and its 10 triplets per query and facet",
    licence="Apache-2.0 (Miracle-dz/FLeW-data)",
    source="https://huggingface.co/datasets/Miracle-dz/FLeW-data (commit 3a30d80; FLeW footnote 1)",
    files=tuple(DataFile(f"{facet}_training_triplet.csv", f"{_FLEW_DATA}/{facet}_training_triplet.csv")
                for facet in ("background", "method", "result")),
    manual="the triplet papers' metadata (<facet>_{full,split}_triplets_metadata.jsonl, 1.6-4.5 GB each) is in "
           "the same repository and is not needed here",
    label="FLeW's released triplets (Miracle-dz/FLeW-data)",
    size="170 MB",
)

S2AG_CITATIONS_FLEW = Dataset(
    name="s2ag_citations_flew",
    folder="s2ag_citations_flew",
    description="Semantic Scholar citations with per-context intents around FLeW's released query papers "
                "(flew_triplets), and the papers' titles and abstracts (FLeW §4.1 used the S2AG release of "
                "2024-04-02)",
    licence="Semantic Scholar API licence agreement (ODC-BY data)",
    source="Semantic Scholar Graph API /paper/{id}/references and /citations (contextsWithIntent), or the S2AG "
           "bulk datasets citations / papers / abstracts filtered to the queries",
    manual="`sdr data fetch s2ag_citations_flew` with S2_API_KEY set (resumable)",
    expected=("references.jsonl", "citations.jsonl", "papers.jsonl"),
    label="Semantic Scholar citation graph with intents (FLeW queries)",
    fetcher="semantic_scholar",
)

S2ORC_SPECTER = Dataset(
    name="s2orc_specter",
    folder="s2orc_specter",
    description="S2ORC full text of SPECTER's training papers (CoSaEmb §4.1: 97,402 papers), in S2ORC's "
                "metadata / pdf_parses layout",
    licence="ODC-BY 1.0",
    source="Semantic Scholar Datasets API, dataset s2orc (streamed shard by shard, only SPECTER's papers kept)",
    manual="`sdr data fetch s2orc_specter` with S2_API_KEY set (streams every S2ORC shard, ~ 250 GB read, "
           "keeps ~ 2 GB)",
    expected=("metadata/metadata.jsonl", "pdf_parses/pdf_parses.jsonl"),
    label="S2ORC full text of SPECTER's training papers",
    fetcher="s2orc",
)

_LABELS = {
    "csfcube": "CSFCube (iesl/CSFCube @ 7ffe012)",
    "csabstruct": "CSAbstruct (allenai/sequential_sentence_classification)",
    "pubmed_rct": "PubMed 20k RCT (Franck-Dernoncourt/pubmed-rct)",
    "cfs3": "CFS3 release (Alab-NII/CFS3)",
    "cf_sentences": "CF-labelled sentences (Iwatsuki & Aizawa 2021)",
    "scidocs": "SciDocs (allenai/scidocs data)",
    "mdcr": "MDCR (zoranmedic/mdcr)",
    "scirepeval": "SciRepEval task registry and samples (allenai/scirepeval)",
    "scirepeval_full": "SciRepEval evaluation sets (allenai/scirepeval_test)",
    "scicite": "SciCite dev/test",
    "scicite_full": "SciCite (allenai/scicite tarball)",
    "acl_arc": "ACL-ARC (allenai/scicite tarball)",
    "s2orc_sample": "S2ORC metadata sample (allenai/s2orc)",
    "specter_sample": "SPECTER training-data sample (allenai/specter)",
    "specter_training": "SPECTER's training triplets (train.pkl)",
    "academic_phrasebank": "Academic Phrasebank phrase lists",
    "scirepeval_cite_prediction": "SPECTER's training triplets (SciRepEval cite_prediction)",
}
_SIZES = {"scidocs": "4.6 GiB with embeddings", "mdcr": "~ 500 MB", "scirepeval_cite_prediction": "~ 3 GB",
          "specter_training": "~ 2 GB", "pubmed_rct": "~ 30 MB", "scicite_full": "22.1 MB"}

DATASETS: dict[str, Dataset] = {
    d.name: replace(d, label=d.label or _LABELS.get(d.name, ""), size=d.size or _SIZES.get(d.name, ""))
    for d in (
        _csfcube(), CSABSTRUCT, PUBMED_RCT, CFS3, CF_SENTENCES, SCIDOCS, MDCR, SCIREPEVAL, SCIREPEVAL_FULL,
        SCICITE, SCICITE_FULL, ACL_ARC, S2ORC_SAMPLE, SPECTER_SAMPLE, SPECTER_TRAINING, ACADEMIC_PHRASEBANK,
        SCIREPEVAL_CITE_PREDICTION, SPECTER_WOL, S2_CITATIONS_THESIS, FLEW_TRIPLETS, S2AG_CITATIONS_FLEW,
        S2ORC_SPECTER,
    )
}


# --------------------------------------------------------------------------- locations


def get(name: str | Dataset) -> Dataset:
    """The registry entry for ``name`` (a :class:`Dataset` passes through)."""
    if isinstance(name, Dataset):
        return name
    if name not in DATASETS:
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}")
    return DATASETS[name]


def cache_dir() -> Path:
    """``$SDR_DATA_CACHE`` or ``~/.cache/sdr`` (not created here)."""
    configured = os.environ.get("SDR_DATA_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "sdr"


def data_root() -> Path | None:
    """``$SDR_DATA`` if set and present, else the cache folder if it holds at least one complete dataset,
    else ``None``. An empty or partial cache (a failed download) is not data: it must not switch
    ``use_real_data: auto`` on."""
    configured = os.environ.get("SDR_DATA")
    if configured and Path(configured).is_dir():
        return Path(configured)
    cache = cache_dir()
    return cache if _holds_a_dataset(cache) else None


def is_complete(dataset: str | Dataset, folder: str | Path) -> bool:
    """Whether ``folder`` holds every expected path of the dataset."""
    dataset, folder = get(dataset), Path(folder)
    if not folder.is_dir():
        return False
    expected = dataset.expected_paths()
    if not expected:
        return any(folder.iterdir())
    return all((folder / p).exists() for p in expected)


def locate(name: str | Dataset) -> Path | None:
    """The first complete folder among ``$SDR_DATA/<folder>`` and the cache, without downloading."""
    dataset = get(name)
    configured = os.environ.get("SDR_DATA")
    candidates = [Path(configured) / dataset.folder] if configured else []
    candidates.append(cache_dir() / dataset.folder)
    return next((c for c in candidates if is_complete(dataset, c)), None)


def resolve(name: str | Dataset, download: bool = True, progress: bool = True) -> Path:
    """Folder of a dataset: ``$SDR_DATA`` → cache → download into the cache (required files only).

    Raises :class:`DatasetUnavailable` with one line naming what to set when it cannot be found.
    """
    dataset = get(name)
    found = locate(dataset)
    if found is not None:
        return found
    reason = "downloads disabled"
    if download:
        try:
            return fetch(dataset, required_only=True, progress=progress)
        except DatasetUnavailable as error:
            reason = str(error).split(": ", 1)[-1]
    raise DatasetUnavailable(_missing_message(dataset, reason))


def _missing_message(dataset: Dataset, reason: str) -> str:
    configured = os.environ.get("SDR_DATA")
    where = f"$SDR_DATA/{dataset.folder} (SDR_DATA={configured})" if configured else "$SDR_DATA (unset)"
    return (
        f"{dataset.name}: not found in {where} nor in the cache {cache_dir() / dataset.folder}, and not "
        f"downloaded ({reason}); set SDR_DATA to a folder holding {dataset.folder}/, or run "
        f"`sdr data fetch {dataset.name}` with internet access (cache: SDR_DATA_CACHE, default ~/.cache/sdr)"
    )


# --------------------------------------------------------------------------- download and checks


def sha256_of(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(url: str, target: Path, expected_sha256: str | None) -> None:
    """Download ``url`` to ``target`` atomically, checking the digest when one is known.

    The bytes go to a hidden ``.<name>.*.part`` file next to ``target`` that is renamed into place only when
    complete and checked; any failure (or an interrupt) removes it, and removes the folders this call created,
    so a failed download leaves nothing that looks like data."""
    created = _missing_parents(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    os.close(handle)
    try:
        try:
            with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response, open(temporary, "wb") as out:
                shutil.copyfileobj(response, out, length=1 << 20)
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            raise DatasetUnavailable(f"download failed: {url}: {reason}") from None
        if expected_sha256:
            actual = sha256_of(temporary)
            if actual != expected_sha256:
                raise ValueError(f"{url}: sha256 {actual} differs from the registry's {expected_sha256}")
        os.replace(temporary, target)
    except BaseException:
        _remove_empty(created)
        raise
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def _extract(archive: Path, folder: Path) -> None:
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as bundle:
            bundle.extractall(folder)
    else:
        with tarfile.open(archive) as bundle:
            bundle.extractall(folder, filter="data")


def fetch(name: str | Dataset, force: bool = False, required_only: bool = False, progress: bool = True) -> Path:
    """Download a dataset into the cache and return its folder.

    Files already present (with a matching digest when one is known) are kept unless ``force``.
    ``required_only`` skips optional files. Raises :class:`DatasetUnavailable` when a needed file has no
    URL or cannot be downloaded, ``ValueError`` when a download's sha256 differs from the registry.

    A dataset that is not in the cache yet is assembled in a hidden staging folder next to it and renamed
    into place only when complete, and archives are unpacked into a staging folder first, so a failed or
    interrupted fetch never leaves a folder that :func:`locate` or :func:`data_root` would take for data.
    """
    dataset = get(name)
    folder = cache_dir() / dataset.folder
    wanted = [f for f in dataset.files if f.required or not required_only]
    no_url = [f.path for f in wanted if f.url is None and f.required]
    if not dataset.files or no_url:
        raise DatasetUnavailable(
            f"{dataset.name}: no direct download{' for ' + ', '.join(no_url[:3]) if no_url else ''}; "
            f"{dataset.manual or 'see ' + dataset.source}"
        )
    created = _missing_parents(folder / "placeholder")
    staging = folder if folder.is_dir() else _staging_folder(folder)
    try:
        skipped_optional = []
        for data_file in tqdm(wanted, desc=f"fetch {dataset.name}", unit="file", disable=not progress):
            target = staging / data_file.path
            if target.exists() and not force and (not data_file.sha256 or sha256_of(target) == data_file.sha256):
                continue
            try:
                _download(data_file.url, target, data_file.sha256)
            except DatasetUnavailable:
                if data_file.required:
                    raise
                skipped_optional.append(data_file.path)
                continue
            if data_file.archive:
                _extract_staged(target, staging)
        if skipped_optional:
            print(f"{dataset.name}: {len(skipped_optional)} optional files could not be downloaded "
                  f"(e.g. {', '.join(skipped_optional[:3])})", file=sys.stderr)
        if not is_complete(dataset, staging):
            raise DatasetUnavailable(f"{dataset.name}: download finished but {folder} lacks expected files "
                                     f"({', '.join(_absent_paths(dataset, staging)[:3])})")
        if staging != folder:
            os.replace(staging, folder)
    except BaseException:
        if staging != folder:
            shutil.rmtree(staging, ignore_errors=True)
        _remove_empty(created)
        raise
    return folder


def verify(name: str | Dataset, folder: str | Path | None = None) -> dict[str, str]:
    """Check a dataset folder file by file: ``{path: "ok" | "mismatch" | "missing" | "absent" | "unchecked"}``.

    ``missing`` = a required file is not there; ``absent`` = an optional one is not there;
    ``unchecked`` = present, but the registry has no digest for it. Without ``folder``: the located folder,
    else the first incomplete one that exists (``$SDR_DATA/<folder>``, then the cache), so the report names
    the files it lacks; :class:`DatasetUnavailable` only when there is no folder at all.
    """
    dataset = get(name)
    folder = Path(folder) if folder is not None else verified_folder(dataset)
    status = {}
    for data_file in dataset.files:
        path = folder / data_file.path
        if not path.exists():
            status[data_file.path] = "missing" if data_file.required else "absent"
        elif not data_file.sha256:
            status[data_file.path] = "unchecked"
        else:
            status[data_file.path] = "ok" if sha256_of(path) == data_file.sha256 else "mismatch"
    for expected in dataset.expected_paths():  # entries without files (manual downloads) list paths only
        if expected not in status and not (folder / expected).exists():
            status[expected] = "missing"
    return status


def status_table() -> list[dict]:
    """One row per dataset: name, where it is found (SDR_DATA / cache / missing), licence, files."""
    rows = []
    configured = os.environ.get("SDR_DATA")
    for dataset in DATASETS.values():
        found = locate(dataset)
        if found is None:
            where = "missing"
        elif configured and found == Path(configured) / dataset.folder:
            where = "SDR_DATA"
        else:
            where = "cache"
        rows.append({"name": dataset.name, "where": where, "path": str(found) if found else "",
                     "files": len(dataset.files), "licence": dataset.licence,
                     "description": dataset.description})
    return rows


# --------------------------------------------------------------------------- command line


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
    for row in rows:
        print(f"{row['name']:<{width}}  {row['where']:<8}  {row['licence'][:40]:<40}  {row['description'][:70]}")
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
            print(f"{name}: {fetch_any(name, force=args.force)}")
        except DatasetUnavailable as error:
            failed.append(name)
            print(f"{name}: not fetched: {error}", file=sys.stderr)
    if failed:
        print(f"not fetched: {', '.join(failed)} (see the messages above)", file=sys.stderr)
        return 1
    return 0


def _cli_status(args) -> int:
    rows = chapter_status(args.chapter)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            print(f"{row['dataset']:<28} {row['state']:<10} {row['folder'] or '-'}")
            if row["missing"] and row["state"] != "missing":
                print(f"{'':<28} missing files: {', '.join(row['missing'][:5])}"
                      + (f" (+{len(row['missing']) - 5})" if len(row['missing']) > 5 else ""))
            if row["state"] != "present":
                print(f"{'':<28} get it: {row['get it']}")
            if row["unpinned"]:
                print(f"{'':<28} not pinned by a digest yet: {len(row['unpinned'])} files (pinned at first download)")
    return 0 if all(row["state"] == "present" for row in rows) else 1


def _cli_verify(args) -> int:
    folder = verified_folder(get(args.name))
    status = verify(args.name, folder)
    states = ("ok", "mismatch", "missing", "absent", "unchecked")
    counts = {s: sum(1 for v in status.values() if v == s) for s in states}
    print(f"{args.name}: {folder}")
    for path, state in status.items():
        if state in ("mismatch", "missing"):
            print(f"{state:<9} {folder / path}")
    print(f"{args.name}: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    return 1 if counts["mismatch"] or counts["missing"] else 0


# --------------------------------------------------------------------------- the data policy
#
# One rule for every chapter's inputs, decided here and nowhere else:
#
# ========  ===============================  ====================================
# profile   training data                    evaluation data
# ========  ===============================  ===========================================
# smoke     replicas                         real when found, else replicas
# real      real when found, else replicas   real when found, else replicas
# paper     real only (downloaded, or stop)  real only (downloaded, or stop)
# ========  ===============================  ===========================================
#
# ``use_real_data=False`` (smoke/real) turns every input into its replica; at ``paper`` it is refused.
# ``smoke`` with ``use_real_data=True`` reads real training data when found too.

REPLICA, REAL_IF_FOUND, REAL_ONLY = "replica", "real if found", "real only"
DRY_RUN_ENV = "SDR_PAPER_DRY_RUN"
"""Set (to 1) by ``make paper-dry-run``: the mirror holds official-format fixtures, so digests are not checked
and every input is labelled a dry-run fixture; released models resolve to the offline MiniLM stand-in."""


class ReplicaForbidden(RuntimeError):
    """A replica or the synthetic corpus was requested while the ``paper`` policy is active."""


class PaperDataMissing(DatasetUnavailable):
    """At ``paper``, inputs of a chapter are missing and could not be fetched: raised before any training."""


@dataclass(frozen=True)
class Policy:
    """What a profile reads: ``training`` and ``evaluation`` are each REPLICA, REAL_IF_FOUND or REAL_ONLY."""

    profile: str
    training: str
    evaluation: str

    @property
    def real_only(self) -> bool:
        return REAL_ONLY in (self.training, self.evaluation)

    def mode(self, role: str) -> str:
        if role not in ("training", "evaluation"):
            raise ValueError(f"role must be 'training' or 'evaluation', got {role!r}")
        return self.training if role == "training" else self.evaluation


def _real_data_setting(setting) -> bool | None:
    """``use_real_data`` as True / False / None (None: "auto", the profile decides)."""
    if isinstance(setting, bool):
        return setting
    if isinstance(setting, str) and setting.strip().lower() in ("auto", "true", "false"):
        value = setting.strip().lower()
        return None if value == "auto" else value == "true"
    raise ValueError(f"use_real_data must be true, false or 'auto', got {setting!r}")


def policy_for(profile: str, use_real_data="auto") -> Policy:
    """The data policy of a profile (see the table at the top of this section)."""
    setting = _real_data_setting(use_real_data)
    if profile == "paper":
        if setting is False:
            raise ValueError("use_real_data=False contradicts the paper profile, which reads the papers' own data only")
        return Policy(profile, REAL_ONLY, REAL_ONLY)
    if setting is False:
        return Policy(profile, REPLICA, REPLICA)
    if profile == "smoke" and setting is None:
        return Policy(profile, REPLICA, REAL_IF_FOUND)
    return Policy(profile, REAL_IF_FOUND, REAL_IF_FOUND)


_active_policy: Policy | None = None


def activate(policy: Policy | None) -> None:
    """Make ``policy`` the process's data policy (``ChapterData`` does it); the replica writers consult it."""
    global _active_policy
    _active_policy = policy
    if policy is not None and policy.real_only:
        os.environ["SDR_DATA_POLICY"] = policy.profile  # worker processes inherit the prohibition
    else:
        os.environ.pop("SDR_DATA_POLICY", None)


def active_policy() -> Policy | None:
    if _active_policy is not None:
        return _active_policy
    if os.environ.get("SDR_DATA_POLICY") == "paper":
        return policy_for("paper")
    return None


def forbid_replica(what: str) -> None:
    """Called by every replica writer and the synthetic corpus: refuses to run under the ``paper`` policy."""
    policy = active_policy()
    if policy is not None and policy.real_only:
        raise ReplicaForbidden(
            f"{what}: the {policy.profile} profile reads the papers' own data only; a replica or the synthetic "
            f"corpus was requested. Each input must come from sdr.datasets.ChapterData.input(), which fetches the "
            f"real data or stops before training.")


def dry_run() -> bool:
    return os.environ.get(DRY_RUN_ENV, "") not in ("", "0")


_OFFICIAL: dict[tuple[str, str], bool] = {}


@dataclass(frozen=True)
class DataInput:
    """One resolved input of a chapter: its folder (or file), whether it is real or a replica, and the line
    that names it on the page."""

    name: str
    kind: str  # "real" or "replica"
    path: Path
    source: str
    verified: bool | None = None  # real data: every file with a known digest matched (None: none checked)

    @property
    def real(self) -> bool:
        return self.kind == "real"

    @property
    def official(self) -> bool:
        """Real, and the released bytes: every file the registry has a digest for matches it (checks against a
        published number run only then; in the paper dry run a fixture is real-shaped but not official)."""
        if not self.real:
            return False
        dataset = get(self.name)
        pinned = [f for f in dataset.files if f.sha256 and not f.archive]
        if not pinned:
            return not dry_run()
        key = (str(self.path), self.name)
        if key not in _OFFICIAL:
            _OFFICIAL[key] = all((self.path / f.path).is_file() and sha256_of(self.path / f.path) == f.sha256
                                 for f in pinned if f.required or (self.path / f.path).exists())
        return _OFFICIAL[key]

    def file(self, relative: str) -> Path:
        """``path / relative``, which must exist."""
        target = self.path / relative
        if not target.exists():
            raise FileNotFoundError(f"{target}: not found in the {self.kind} {self.name} folder {self.path}")
        return target


# Every dataset a chapter reads at the ``paper`` profile. ChapterData checks (and downloads) all of them before
# the chapter does anything else, so a missing one stops the chapter in seconds, not after hours of training.
CHAPTER_DATA: dict[str, tuple[str, ...]] = {
    "benchmarks": ("csfcube", "csabstruct", "pubmed_rct", "s2orc_specter"),
    "specter": ("scirepeval_cite_prediction", "scidocs", "csfcube"),
    "scincl": ("scirepeval_cite_prediction", "scidocs", "csfcube"),
    "cfs3": ("academic_phrasebank", "csabstruct", "scicite", "csfcube", "s2orc_sample", "cfs3"),
    "cosaemb": ("s2orc_specter", "scirepeval_cite_prediction", "scicite", "csfcube", "scirepeval_full"),
    "sciaspect": ("s2_citations_thesis", "scidocs", "mdcr", "scirepeval_full", "csfcube"),
    # flew_triplets first: the S2 fetch of FLeW's graph takes its anchors (the query list) from it
    "flew": ("flew_triplets", "s2ag_citations_flew", "csabstruct", "mdcr", "scirepeval", "scirepeval_full", "csfcube"),
    "scitoricsbert": ("cfs3", "csabstruct", "pubmed_rct", "cf_sentences"),
    "summary": (),
}


# Released checkpoints and baselines a chapter scores at ``paper`` (its base model comes from the notebook).
CHAPTER_MODELS: dict[str, tuple[str, ...]] = {
    # Tables 3-4's baselines as the authors scored them (kaisugi/rhetorical_aspect_embeddings README) and the released
    # SciToricsBERT; sdr.methods.scitoricsbert.BASELINES names their rows and poolings
    "scitoricsbert": ("bert-base-uncased", "roberta-base", "microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract-fulltext",
                      "sentence-transformers/stsb-roberta-base-v2", "princeton-nlp/sup-simcse-roberta-base",
                      "kaisugi/scitoricsbert"),
    # FLeW's Table 1-2 baselines and its released encoders (footnote 1; FLeW-split: trained on split abstracts,
    # the paper's FLeW; FLeW-full: on full abstracts, Table 3's "w/o Textual")
    "flew": ("allenai/specter", "malteos/scincl", "allenai/specter2_base", "Miracle-dz/FLeW-split",
             "Miracle-dz/FLeW-full"),
    "specter": ("allenai/specter",),  # SciNCL Table 1's SPECTER row, scored on SciDocs and CSFCube
    "scincl": ("malteos/scincl",),  # SciNCL Table 1's SciNCL row
    "cosaemb": ("allenai/specter",),  # Table 6's SPECTER row
}

_MINILM_NAMES = {"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


def offline() -> bool:
    """``SDR_OFFLINE`` set: no download is attempted (the paper dry run, and users who want a clear stop)."""
    return os.environ.get("SDR_OFFLINE", "") not in ("", "0")


def _model_missing(name: str, download: bool) -> str | None:
    """None when a model can be loaded (a folder, the offline MiniLM, the Hugging Face cache, or downloaded now),
    else why not."""
    if Path(name).exists() or name.lower() in _MINILM_NAMES:
        return None
    from huggingface_hub import snapshot_download

    patterns = ["*.json", "*.txt", "*.safetensors", "*.model", "pytorch_model.bin"]
    try:
        snapshot_download(name, local_files_only=True, allow_patterns=patterns)
        return None
    except Exception:  # noqa: BLE001 - any failure means "not cached"
        pass
    if not download:
        return "not in the Hugging Face cache (downloads off)"
    try:
        snapshot_download(name, allow_patterns=patterns)
        return None
    except Exception as error:  # noqa: BLE001 - reported, not hidden
        return f"download failed: {type(error).__name__}: {str(error)[:200]}"


def fetch_model(name: str) -> str:
    """``sdr data fetch --model NAME``: a Hub model into the Hugging Face cache."""
    reason = _model_missing(name, download=True)
    if reason is not None:
        raise DatasetUnavailable(f"model {name}: {reason}")
    return name


def _folder_with(dataset: Dataset, paths: tuple[str, ...]) -> Path | None:
    configured = os.environ.get("SDR_DATA")
    candidates = [Path(configured) / dataset.folder] if configured else []
    candidates.append(cache_dir() / dataset.folder)
    for candidate in candidates:
        if candidate.is_dir() and (all((candidate / p).exists() for p in paths) if paths else any(candidate.iterdir())):
            return candidate
    return None


def paper_files(dataset: str | Dataset) -> tuple[str, ...]:
    """The files a ``paper`` run reads of a dataset: the expected ones and the optional files marked ``paper``
    (the SPECTER rankings of CSFCube, SciDocs' recommendations, the CFS3 release's splits), which a paper run
    fetches before it starts instead of failing on them after training."""
    dataset = get(dataset)
    optional = tuple(f.path for f in dataset.files if not f.required and not f.archive and f.paper)
    return tuple(dict.fromkeys((*dataset.expected_paths(), *optional)))


def fetch_command(dataset: str | Dataset) -> str:
    """What a user types to get a dataset (or what to do by hand when there is no download)."""
    dataset = get(dataset)
    if dataset.fetcher:
        return dataset.manual or f"sdr data fetch {dataset.name}"
    if dataset.files and all(f.url for f in dataset.files if f.required):
        return f"sdr data fetch {dataset.name}" + (f" ({dataset.size})" if dataset.size else "")
    return dataset.manual or f"see {dataset.source}"


class ChapterData:
    """A chapter's inputs under its profile's data policy: one :meth:`input` call per input, no branching.

    At ``paper`` the constructor checks every dataset the chapter reads (:data:`CHAPTER_DATA`, or ``needs``),
    downloads what is missing when ``download`` is on, and otherwise raises one :class:`PaperDataMissing`
    listing every missing dataset and the command that fetches it, before anything is trained. It also
    makes the policy active, so a replica writer called under ``paper`` raises :class:`ReplicaForbidden`.

    Example::

        data = ChapterData("specter", profile, use_real_data)
        scidocs_input = data.input("scidocs", replica=lambda folder: write_scidocs(eval_corpus, folder),
                                   replica_source="SciDocs replica of the evaluation papers")
        scidocs_input.path, scidocs_input.real, data.sources
    """

    def __init__(self, chapter: str, profile: str, use_real_data="auto", *, download: bool | None = None,
                 needs: tuple[str, ...] | list[str] | None = None, models: tuple[str, ...] | list[str] = (),
                 workdir: str | Path | None = None, progress: bool = True):
        self.chapter, self.profile = chapter, profile
        self.policy = policy_for(profile, use_real_data)
        self.download = self.policy.real_only if download is None else bool(download)
        if offline():
            self.download = False
        self.models = tuple(dict.fromkeys([*models, *CHAPTER_MODELS.get(chapter, ())]))
        self._model_sources: dict[str, str] = {}
        if needs is None:
            needs = CHAPTER_DATA.get(chapter, ())
        self.needs = tuple(dict.fromkeys(needs))
        for name in self.needs:
            get(name)  # unknown names fail here
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix=f"sdr-{chapter}-data-"))
        self.progress = progress
        self.inputs: dict[str, DataInput] = {}
        self.absent: list[str] = []  # optional inputs neither found nor replicated (smoke/real)
        self._prepared: dict[str, Path] = {}
        activate(self.policy)
        if self.policy.real_only:
            self._prepare()

    # ---------------------------------------------------------------- paper: everything before training
    def _prepare(self) -> None:
        missing: list[tuple[Dataset, str]] = []
        offline_reason = None
        for name in self.needs:
            dataset = get(name)
            files = paper_files(dataset)
            folder = _folder_with(dataset, files)
            if folder is None and self.download and offline_reason is None:
                try:
                    folder = fetch_any(dataset, progress=self.progress)
                    folder = _folder_with(dataset, files)
                    if folder is None:
                        raise DatasetUnavailable(f"{dataset.name}: fetched, but the files a paper run reads are "
                                                 f"not all there: {', '.join(files[:5])}")
                except DatasetUnavailable as error:
                    reason = str(error)
                    if "download failed" in reason:
                        offline_reason = reason  # no network: do not wait for every other download to time out
                    missing.append((dataset, reason))
                    continue
            if folder is None:
                reason = (f"not tried: offline ({offline_reason.split(': ', 1)[-1][:160]})" if offline_reason
                          else "not in $SDR_DATA or the cache, and downloads are off" if not self.download
                          else "not found")
                missing.append((dataset, reason))
                continue
            self._prepared[name] = folder
        missing_models = []
        for model in self.models:
            reason = None if dry_run() else _model_missing(model, self.download and offline_reason is None)
            if reason is not None and offline_reason is not None and self.download:
                reason = "not tried: offline"
            if reason is not None:
                if "download failed" in reason:
                    offline_reason = offline_reason or reason
                missing_models.append((model, reason))
        if missing or missing_models:
            raise PaperDataMissing(self._missing_report(missing, missing_models))

    def _missing_report(self, missing: list[tuple["Dataset", str]], missing_models=()) -> str:
        lines = [f"{self.chapter} at profile {self.profile}: {len(missing)} of the {len(self.needs)} data sets it "
                 f"reads {'is' if len(missing) == 1 else 'are'} missing"
                 + (f", and {len(missing_models)} of its {len(self.models)} models" if missing_models else "")
                 + "; nothing was trained."]
        for dataset, reason in missing:
            lines.append(f"  - {dataset.name}: {dataset.description}")
            lines.append(f"      get it: {fetch_command(dataset)}")
            lines.append(f"      why missing: {reason}")
        for model, reason in missing_models:
            lines.append(f"  - model {model} (Hugging Face Hub)")
            lines.append(f"      get it: sdr data fetch --model {model}")
            lines.append(f"      why missing: {reason}")
        lines.append(f"Fetch everything this chapter reads with `sdr data fetch --for {self.chapter}` (internet "
                     f"needed; cache: $SDR_DATA_CACHE, default ~/.cache/sdr), or set SDR_DATA to a mirror holding "
                     f"these folders; `sdr data status --for {self.chapter}` lists what is present.")
        return "\n".join(lines)

    # ---------------------------------------------------------------- one input
    def input(self, name: str, replica=None, *, role: str = "evaluation", replica_source: str | None = None,
              files: tuple[str, ...] = (), real=None, optional: bool = False) -> DataInput | None:
        """Resolve one input: its real folder or, where the policy allows, the replica ``replica`` writes.

        ``replica(folder)`` is called with an empty folder and returns the path to use (a folder or a file).
        ``real(folder)``, when given, turns the real folder into the same kind of thing the replica is (e.g. a
        chunk file cut from S2ORC full text) and its return value becomes the input's path.
        ``files`` are paths the real folder must hold for this input (default: the dataset's expected files).
        ``optional``: at smoke/real, an input that is neither found nor has a replica is None (its rows stay
        empty and the page says so); at ``paper`` nothing is optional.
        """
        dataset = get(name)
        mode = self.policy.mode(role)
        if mode == REAL_ONLY:
            if name not in self._prepared:
                raise ValueError(f"{self.chapter}: input {name!r} is read at profile {self.profile} but not declared "
                                 f"in sdr.datasets.CHAPTER_DATA[{self.chapter!r}] (nor in needs=), so it was not "
                                 f"checked before training")
            folder = self._prepared[name]
            for relative in files:
                if not (folder / relative).exists():
                    raise FileNotFoundError(f"{folder / relative}: not found; the {name} folder {folder} lacks it")
            return self._remember(self._real_input(dataset, folder, real), role)
        folder = _folder_with(dataset, tuple(files) or dataset.expected_paths()) if mode == REAL_IF_FOUND else None
        if folder is not None:
            return self._remember(self._real_input(dataset, folder, real), role)
        if replica is None and optional:
            self.absent.append(name)
            return None
        if replica is None:
            raise DatasetUnavailable(
                f"{self.chapter}: {name} is not in $SDR_DATA or the cache and has no replica; "
                f"{fetch_command(dataset)}")
        target = self.workdir / f"replica-{name}"
        target.mkdir(parents=True, exist_ok=True)
        path = Path(replica(target))
        source = replica_source or f"{dataset.label or dataset.name} replica"
        return self._remember(DataInput(name, "replica", path, f"{source} [replica]"), role)

    def model(self, name: str) -> str:
        """The name or folder to load a model from. At ``paper`` the model was checked (or downloaded) before the
        chapter started; in the paper dry run every Hub model is the offline MiniLM stand-in, and the page says so."""
        if dry_run() and not Path(name).exists() and name.lower() not in _MINILM_NAMES:
            self._model_sources[name] = f"{name}: the offline all-MiniLM-L6-v2 as its stand-in [paper dry run]"
            return "minilm"
        return name

    @property
    def model_sources(self) -> list[str]:
        return list(self._model_sources.values())

    def _real_input(self, dataset: Dataset, folder: Path, adapt=None) -> DataInput:
        label = dataset.label or dataset.name
        path = Path(adapt(folder)) if adapt is not None else folder
        if dry_run():
            linked = DataInput(dataset.name, "real", folder, label).official
            what = "the released files, linked" if linked else "an official-format fixture"
            return DataInput(dataset.name, "real", path, f"{label} [paper dry run: {what}]", verified=linked)
        return DataInput(dataset.name, "real", path, label, verified=None)

    def lazy(self, what: str, build):
        """A function that builds something synthetic once, on its first call (the corpus behind the replicas, only
        when a replica is written); under the ``paper`` policy the call raises :class:`ReplicaForbidden`."""
        built = []

        def get_it():
            if not built:
                built.append(self.replica(what, build))
            return built[0]

        return get_it

    def _remember(self, item: DataInput, role: str = "evaluation") -> DataInput:
        key = item.name
        known = self.inputs.get(key)
        if known is not None and (known.kind, known.path) != (item.kind, item.path):
            key = f"{item.name} ({role})"  # one dataset read two ways (smoke: replica to train on, real to score)
        self.inputs.setdefault(key, item)
        return item

    def replica(self, what: str, build):
        """Build something synthetic that is not a registry dataset (the synthetic training corpus); refused
        at ``paper`` like every replica. ``what`` names it in the error."""
        forbid_replica(what)
        return build()

    def plan(self, runs, device_name: str | None = None) -> list[dict]:
        """At ``paper``, print the chapter's plan before it trains (:func:`sdr.plan.print_plan`: the inputs with
        their sizes, each run's examples, steps and estimated GPU time); at other profiles print nothing."""
        if not self.policy.real_only:
            return []
        from sdr.plan import print_plan

        return print_plan(self, runs, device_name)

    # ---------------------------------------------------------------- what the page shows
    @property
    def sources(self) -> list[str]:
        """One line per input resolved so far, for the captions."""
        return [item.source for item in self.inputs.values()]

    @property
    def replicas(self) -> list[str]:
        return [name for name, item in self.inputs.items() if not item.real]

    def table(self):
        """The page's data table: every input, real or replica, and where it came from."""
        import pandas as pd

        rows = [{"input": key, "kind": item.kind, "source": item.source} for key, item in self.inputs.items()]
        rows += [{"input": name, "kind": "absent", "source": f"not found ({fetch_command(name)}); its rows stay empty"}
                 for name in self.absent]
        rows += [{"input": model.split(":", 1)[0], "kind": "model stand-in", "source": line}
                 for model, line in self._model_sources.items()]
        return pd.DataFrame(rows, columns=["input", "kind", "source"]).set_index("input")


# --------------------------------------------------------------------------- the lock file
# Files whose bytes the registry cannot pin (the mirror does not have them) are pinned by their first download:
# size and sha256 go to a lock file the user can commit, and a later download or check that differs is an error.

def lock_path() -> Path:
    """``$SDR_DATA_LOCK`` or ``data/datasets.lock.json`` of the checkout."""
    configured = os.environ.get("SDR_DATA_LOCK")
    return Path(configured) if configured else Path(__file__).resolve().parents[2] / "data" / "datasets.lock.json"


def read_lock() -> dict:
    path = lock_path()
    if not path.exists():
        return {}
    try:
        lock = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error.msg}, line {error.lineno}); expected "
                         f"{{dataset: {{file: {{size, sha256}}}}}}") from None
    if not isinstance(lock, dict):
        raise ValueError(f"{path}: expected {{dataset: {{file: {{size, sha256}}}}}}")
    return lock


def expected_digest(dataset: str | Dataset, relative: str) -> str | None:
    """The sha256 a file must have: the registry's, else the lock file's, else None (not pinned yet)."""
    dataset = get(dataset)
    for data_file in dataset.files:
        if data_file.path == relative and data_file.sha256:
            return data_file.sha256
    entry = read_lock().get(dataset.name, {}).get(relative)
    return entry.get("sha256") if isinstance(entry, dict) else None


def pin(dataset: str | Dataset, folder: str | Path) -> dict[str, str]:
    """Check every downloaded file without a registry digest against the lock file, and record those not in it.

    Returns ``{path: "pinned" | "matches lock" | "registry"}``; a file whose bytes differ from its lock entry
    raises ``ValueError`` naming the file, both digests and the lock file.
    """
    dataset, folder = get(dataset), Path(folder)
    lock = read_lock()
    entries = lock.setdefault(dataset.name, {})
    status, changed = {}, False
    for data_file in dataset.files:
        path = folder / data_file.path
        if data_file.archive or not path.is_file():
            continue
        if data_file.sha256:
            status[data_file.path] = "registry"
            continue
        digest, size = sha256_of(path), path.stat().st_size
        known = entries.get(data_file.path)
        if known:
            if known.get("sha256") != digest:
                raise ValueError(f"{path}: sha256 {digest} ({size} bytes) differs from {lock_path()}'s "
                                 f"{known.get('sha256')} ({known.get('size')} bytes) for {dataset.name}/"
                                 f"{data_file.path}: the upstream file changed or the download is damaged")
            status[data_file.path] = "matches lock"
        else:
            entries[data_file.path] = {"size": size, "sha256": digest, "url": data_file.url,
                                       "recorded": datetime.now(timezone.utc).date().isoformat()}
            status[data_file.path] = "pinned"
            changed = True
    if changed:
        target = lock_path()
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_suffix(".tmp")
        temporary.write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(temporary, target)
        print(f"{dataset.name}: pinned {sum(v == 'pinned' for v in status.values())} files by their first download "
              f"in {target} (commit it to pin them for everyone)")
    return status


def fetch_any(name: str | Dataset, force: bool = False, progress: bool = True) -> Path:
    """Get a dataset into the cache by whatever route it has: file URLs (then pinned, :func:`pin`) or an API
    fetcher (:mod:`sdr.fetchers`)."""
    dataset = get(name)
    if dataset.fetcher:
        from sdr import fetchers

        folder = cache_dir() / dataset.folder
        fetchers.fetch_dataset(dataset, folder, progress=progress)
        if not is_complete(dataset, folder):
            raise DatasetUnavailable(f"{dataset.name}: the {dataset.fetcher} fetcher finished but {folder} lacks "
                                     f"{[p for p in dataset.expected_paths() if not (folder / p).exists()]}")
        return folder
    folder = fetch(dataset, force=force, progress=progress)
    pin(dataset, folder)
    return folder


def chapter_status(chapter: str) -> list[dict]:
    """``sdr data status --for CHAPTER``: each dataset the chapter reads at ``paper``, where it is, what is missing
    and which of its files are not pinned by a digest (registry or lock file)."""
    if chapter not in CHAPTER_DATA:
        raise ValueError(f"unknown chapter {chapter!r}; chapters: {', '.join(CHAPTER_DATA)}")
    rows = []
    lock = read_lock()
    for name in CHAPTER_DATA[chapter]:
        dataset = get(name)
        files = paper_files(dataset)
        folder = _folder_with(dataset, files) or _folder_with(dataset, dataset.expected_paths())
        missing = [p for p in files if folder is None or not (folder / p).exists()]
        unpinned = [f.path for f in dataset.files if not f.sha256 and not f.archive
                    and f.path not in lock.get(name, {})]
        if folder is None:
            state = "missing"  # also for a dataset that lists no files (scirepeval_full): its folder is not there
        elif dataset.fetcher:
            state = "present"
        else:
            state = "present" if not missing else "incomplete"
        rows.append({"dataset": name, "state": state, "folder": str(folder or ""), "missing": missing,
                     "unpinned": unpinned, "get it": fetch_command(dataset)})
    return rows

# --------------------------------------------------------------------------- helpers of fetch and verify


def verified_folder(dataset: Dataset) -> Path:
    """The folder :func:`verify` checks: the located one, else the first existing (incomplete) candidate."""
    found = locate(dataset)
    if found is not None:
        return found
    configured = os.environ.get("SDR_DATA")
    candidates = ([Path(configured) / dataset.folder] if configured else []) + [cache_dir() / dataset.folder]
    existing = next((c for c in candidates if c.is_dir()), None)
    if existing is None:
        raise DatasetUnavailable(_missing_message(dataset, "no folder to verify"))
    return existing


def _absent_paths(dataset: Dataset, folder: Path) -> list[str]:
    return [p for p in dataset.expected_paths() if not (folder / p).exists()] or ["an empty folder"]


def _holds_a_dataset(folder: Path) -> bool:
    """Whether ``folder`` (a data root) has at least one complete dataset folder of the registry."""
    return folder.is_dir() and any(is_complete(d, folder / d.folder) for d in DATASETS.values())


def _missing_parents(path: Path) -> list[Path]:
    """The folders above ``path`` that do not exist yet, deepest first (to remove them after a failure)."""
    missing = []
    for parent in Path(path).parents:
        if parent.exists():
            break
        missing.append(parent)
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove the given folders, deepest first, as long as they are empty (never anything else)."""
    for folder in folders:
        if not folder.exists():
            continue
        try:
            folder.rmdir()
        except OSError:  # not empty: someone else's files, and so are its parents
            break


def _staging_folder(folder: Path) -> Path:
    folder.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.", suffix=".partial"))


def _extract_staged(archive: Path, folder: Path) -> None:
    """Unpack ``archive`` into a staging folder, then move its entries into ``folder``: an interrupted
    extraction leaves no partial tree in the dataset folder."""
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.", suffix=".unpacking"))
    try:
        _extract(archive, staging)
        _merge_into(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _merge_into(source: Path, destination: Path) -> None:
    """Move every file of ``source`` to the same place under ``destination`` (files replaced one by one by
    rename, folders merged, nothing else of ``destination`` removed) — as unpacking in place would."""
    destination.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        target = destination / entry.name
        if entry.is_dir() and not entry.is_symlink() and target.is_dir() and not target.is_symlink():
            _merge_into(entry, target)
        else:
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            os.replace(entry, target)


def paper_data_markdown() -> str:
    """The README's table of what each chapter reads at ``paper`` (:data:`CHAPTER_DATA`, :data:`CHAPTER_MODELS`)
    and how each dataset is fetched; ``tests/test_readme.py`` keeps the README's copy equal to it."""
    lines = ["| chapter | data sets it reads at `paper` | released models it scores |", "|---|---|---|"]
    for chapter, names in CHAPTER_DATA.items():
        if not names:
            continue
        data = ", ".join(f"`{n}`" + (" (API)" if get(n).fetcher else " (manual)" if not get(n).files else "")
                         for n in names)
        models = ", ".join(f"`{m}`" for m in CHAPTER_MODELS.get(chapter, ())) or "—"
        lines.append(f"| {chapter} | {data} | {models} |")
    return "\n".join(lines)
