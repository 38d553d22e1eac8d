"""The registry: every benchmark, corpus and API-built data set, and what each chapter reads at ``paper``.

``DATASETS`` maps a name to its official source (repository at a commit, or the URL its README gives),
licence, the files expected in its folder, and the sha256 of each file where the bytes are known
(computed from the shared mirror; digests are not the data). :data:`CHAPTER_DATA` and
:data:`CHAPTER_MODELS` list the data sets and released models each chapter reads at ``paper``.

This module is data: it changes when a data set, a file, a digest or a chapter's inputs change, and for
nothing else (how data is found, downloaded, pinned or reported lives beside it in :mod:`sdr.datasets`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


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


def _github(repo: str, commit: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


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
    # SciDocs' shipped SPECTER embeddings are a dataset of their own (scidocs_specter_embeddings, below)
    manual="or `aws s3 sync --no-sign-request s3://ai2-s2-research-public/specter/scidocs/ "
           "$SDR_DATA_CACHE/scidocs/ --exclude 'specter-embeddings/*'`",
)

SCIDOCS_SPECTER_EMBEDDINGS = Dataset(
    name="scidocs_specter_embeddings",
    folder="scidocs_specter_embeddings",
    description="SciDocs' shipped SPECTER embeddings (specter-embeddings/: cls for MAG and MeSH, user-citation for "
                "the proximity tasks, recomm for recommendations), which the official evaluator scores to SPECTER's "
                "published SciDocs row with no model",
    licence="CC BY 4.0",
    source="https://github.com/allenai/scidocs @ ebf239d30d70062b4111f9e3a8efe2b3d3f3d303 "
           "(data: s3://ai2-s2-research-public/specter/scidocs/specter-embeddings/)",
    files=tuple(DataFile(p, f"{_SCIDOCS_BASE}/specter-embeddings/{p}")
                for p in ("cls.jsonl", "user-citation.jsonl", "recomm.jsonl")),
    manual="or `aws s3 sync --no-sign-request s3://ai2-s2-research-public/specter/scidocs/specter-embeddings/ "
           "$SDR_DATA_CACHE/scidocs_specter_embeddings/`",
    label="SciDocs' shipped SPECTER embeddings",
    size="most of SciDocs' 4.6 GiB",
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
# papers' metadata (full and split abstracts, 1.6-4.5 GB a file; the split ones are flew_split_metadata below).
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
    manual="the triplet papers' split abstracts are the dataset flew_split_metadata; the full-abstract metadata "
           "(<facet>_full_triplets_metadata.jsonl) is not read",
    label="FLeW's released triplets (Miracle-dz/FLeW-data)",
    size="170 MB",
)

# The same repository's per-facet metadata of the triplets' papers with the abstract cut to the facet by FLeW's
# LLM splitter (the published recipe's training texts; issue 37). Its record layout is not documented: the reader
# (sdr.methods.flew.read_split_metadata) takes a corpus id, a title and an abstract per line and stops, naming the
# file, the line and the keys it found, on anything else.
FLEW_SPLIT_METADATA = Dataset(
    name="flew_split_metadata",
    folder="flew_split_metadata",
    description="FLeW's released metadata of the triplets' papers per facet with the LLM-split abstracts "
                "(<facet>_split_triplets_metadata.jsonl: title and abstract[x] by S2 corpus id)",
    licence="Apache-2.0 (Miracle-dz/FLeW-data)",
    source="https://huggingface.co/datasets/Miracle-dz/FLeW-data (FLeW footnote 1)",
    files=tuple(DataFile(f"{facet}_split_triplets_metadata.jsonl",
                         f"{_FLEW_DATA}/{facet}_split_triplets_metadata.jsonl")
                for facet in ("background", "method", "result")),
    label="FLeW's released split abstracts (Miracle-dz/FLeW-data)",
    size="1.6-4.5 GB a file",
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

# The bulk route (sdr.fetchers.bulk): the Semantic Scholar Datasets API's gzipped JSONL shards, streamed and filtered
# with DuckDB to the ids a chapter needs. Written in the layout of the Graph API fetch it replaces (same_layout_as),
# with S2 corpus ids as paper ids; a chapter switches by naming the bulk entry in CHAPTER_DATA (BULK_ROUTE).
S2AG_BULK_FLEW = Dataset(
    name="s2ag_bulk_flew",
    folder="s2ag_bulk_flew",
    description="Semantic Scholar citations (contexts, intents, isinfluential) of FLeW's released query papers and "
                "the papers' titles and abstracts, from the S2AG bulk datasets citations / papers / abstracts of one "
                "release, filtered to the queries (FLeW §4.1 used the release of 2024-04-02)",
    licence="ODC-BY 1.0 (Semantic Scholar Academic Graph datasets)",
    source="Semantic Scholar Datasets API /release/{id}/dataset/{citations,papers,abstracts} (pre-signed shard links)",
    manual="`sdr data fetch s2ag_bulk_flew` with S2_API_KEY set (streams the citations, papers and abstracts shards "
           "once and keeps the queries' links; resumable per shard)",
    expected=("references.jsonl", "citations.jsonl", "papers.jsonl", "anchors.txt"),
    label="S2AG bulk citations with intents (FLeW queries)",
    fetcher="bulk",
    size="≈ 0.44 TB streamed (estimate, sdr.fetchers.bulk.bulk_plan)",
)

S2AG_BULK_THESIS = Dataset(
    name="s2ag_bulk_thesis",
    folder="s2ag_bulk_thesis",
    description="Semantic Scholar references and citations with intents and contexts of the thesis' anchor papers "
                "(SciNCL's w/o-leakage queries) and the references of their references (Bansal §4.3), from the S2AG "
                "bulk datasets of one release",
    licence="ODC-BY 1.0 (Semantic Scholar Academic Graph datasets)",
    source="Semantic Scholar Datasets API /release/{id}/dataset/{citations,papers,abstracts}; the anchors' corpus ids "
           "through the Graph API /paper/batch",
    manual="`sdr data fetch s2ag_bulk_thesis` with S2_API_KEY set (two passes over the citations shards for the "
           "references of references; resumable per shard)",
    expected=("references.jsonl", "citations.jsonl", "papers.jsonl", "anchors.txt"),
    label="S2AG bulk citations with intents (thesis anchors)",
    fetcher="bulk",
    size="≈ 0.74 TB streamed (estimate, sdr.fetchers.bulk.bulk_plan)",
)

S2ORC_CITATION_GRAPH = Dataset(
    name="s2orc_citation_graph",
    folder="s2orc_citation_graph",
    description="The citation graph SciNCL embeds (§3.4, A.4: S2ORC, 52,526,134 nodes / 463,697,639 edges): the S2AG "
                "citations dataset as an edge list (citing<TAB>cited corpus ids) over the papers of the release's "
                "s2orc dataset",
    licence="ODC-BY 1.0 (Semantic Scholar Academic Graph datasets)",
    source="Semantic Scholar Datasets API /release/{id}/dataset/{s2orc,citations}",
    manual="`sdr data fetch s2orc_citation_graph` with S2_API_KEY set (reads the s2orc shards' corpus ids and every "
           "citations shard; resumable per shard); then `sdr graph embed "
           "$SDR_DATA_CACHE/s2orc_citation_graph/edges --work-dir DIR` and run the SciNCL chapter with "
           "`-p graph_embedding DIR`, or let the chapter embed it (the paper profile's graph_source s2orc)",
    expected=("edges", "graph_stats.json"),
    label="S2ORC citation graph from the S2AG bulk citations",
    fetcher="bulk",
    size="≈ 0.56 TB streamed (estimate, sdr.fetchers.bulk.bulk_plan)",
)

# The texts of SciNCL's w/o-leakage triples (issue 37): the triples name 680,967 papers by corpus id only (A.4); their
# titles and abstracts come from the bulk papers and abstracts datasets filtered to those ids (no Graph API dataset:
# at 500 ids a /paper/batch request it would be 1,362 requests, but the bulk route keeps one release for all).
S2AG_BULK_WOL_TEXTS = Dataset(
    name="s2ag_bulk_wol_texts",
    folder="s2ag_bulk_wol_texts",
    description="Titles and abstracts of every paper of SciNCL's released w/o-leakage triples (specter_wol: query, "
                "positive and negative corpus ids), from the S2AG bulk datasets papers / abstracts of one release, "
                "filtered to those ids; the ids the release lacks are listed in missing.jsonl",
    licence="ODC-BY 1.0 (Semantic Scholar Academic Graph datasets)",
    source="Semantic Scholar Datasets API /release/{id}/dataset/{papers,abstracts} (pre-signed shard links)",
    manual="`sdr data fetch s2ag_bulk_wol_texts` with S2_API_KEY set (reads the corpus ids from specter_wol, streams "
           "the papers and abstracts shards once; resumable per shard)",
    expected=("papers.jsonl", "missing.jsonl", "ids.txt"),
    label="S2AG bulk titles and abstracts (SciNCL's w/o-leakage papers)",
    fetcher="bulk",
    size="≈ 0.15 TB streamed (estimate, sdr.fetchers.bulk.bulk_plan)",
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
        _csfcube(), CSABSTRUCT, PUBMED_RCT, CFS3, CF_SENTENCES, SCIDOCS, SCIDOCS_SPECTER_EMBEDDINGS, MDCR, SCIREPEVAL, SCIREPEVAL_FULL,
        SCICITE, SCICITE_FULL, ACL_ARC, S2ORC_SAMPLE, SPECTER_SAMPLE, SPECTER_TRAINING, ACADEMIC_PHRASEBANK,
        SCIREPEVAL_CITE_PREDICTION, SPECTER_WOL, S2_CITATIONS_THESIS, FLEW_TRIPLETS, FLEW_SPLIT_METADATA,
        S2AG_CITATIONS_FLEW,
        S2ORC_SPECTER, S2AG_BULK_FLEW, S2AG_BULK_THESIS, S2ORC_CITATION_GRAPH,
        S2AG_BULK_WOL_TEXTS,
    )
}


def get(name: str | Dataset) -> Dataset:
    """The registry entry for ``name`` (a :class:`Dataset` passes through)."""
    if isinstance(name, Dataset):
        return name
    if name not in DATASETS:
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}")
    return DATASETS[name]


# Every dataset a chapter reads at the ``paper`` profile. ChapterData checks (and downloads) all of them before
# the chapter does anything else, so a missing one stops the chapter in seconds, not after hours of training.

#: What the ``real`` profile reads when it finds it (``$SDR_DATA`` or the cache), else a replica: the real data of the
#: book's mirror (``make data-real`` and the publish workflow fetch these into the cache).
REAL_PROFILE_DATA = ("csfcube", "csabstruct", "scicite", "academic_phrasebank", "s2orc_sample", "specter_sample",
                     "scirepeval")

CHAPTER_DATA: dict[str, tuple[str, ...]] = {
    # the parts' data (sdr.methods.benchmarks.PART_DATA): the released part reads SciDocs with its shipped SPECTER
    # embeddings and every benchmark a chapter's released check scores; paragraph retrieval S2ORC's full text
    "benchmarks": ("csfcube", "csabstruct", "pubmed_rct", "scidocs", "scidocs_specter_embeddings", "mdcr", "scirepeval_full",
                   "s2orc_specter"),
    # scidocs_specter_embeddings: the released part's check of SciDocs' shipped SPECTER embeddings (after scidocs)
    "specter": ("scirepeval_cite_prediction", "scidocs", "scidocs_specter_embeddings", "csfcube"),
    # mdcr: the released malteos/scincl's check (thesis Table 6.9); specter_wol: Table 1's w/o-leakage graph, and
    # s2ag_bulk_wol_texts (after it: its fetch reads the triples' ids) the texts its training reads;
    # s2orc_citation_graph: SciNCL's graph, embedded in the chapter (graph_source "s2orc"; without it when the graph
    # is the triplets' or an embedding is given: sdr.methods.scincl.paper_inputs)
    "scincl": ("scirepeval_cite_prediction", "scidocs", "csfcube", "mdcr", "specter_wol", "s2ag_bulk_wol_texts",
               "s2orc_citation_graph"),
    "cfs3": ("academic_phrasebank", "csabstruct", "scicite", "csfcube", "s2orc_sample", "cfs3"),
    "cosaemb": ("s2orc_specter", "scirepeval_cite_prediction", "scicite", "csfcube", "scirepeval_full"),
    # the thesis' graph through the bulk route (BULK_ROUTE: the Graph API crawl of its anchors and their references'
    # references takes days), read as s2_citations_thesis
    "sciaspect": ("s2ag_bulk_thesis", "scidocs", "mdcr", "scirepeval_full", "csfcube"),
    # flew_triplets first: the fetch of FLeW's graph takes its anchors (the query list) from it; the graph through the
    # bulk route (BULK_ROUTE: the Graph API crawl around 216 K anchors takes weeks), read as s2ag_citations_flew
    # flew_split_metadata: the published recipe's training texts (its `published` part)
    "flew": ("flew_triplets", "s2ag_bulk_flew", "csabstruct", "mdcr", "scirepeval", "scirepeval_full", "csfcube",
             "flew_split_metadata"),
    "scitoricsbert": ("cfs3", "csabstruct", "pubmed_rct", "cf_sentences"),
    "summary": (),
}


#: The bulk route of each chapter whose Graph API crawl takes days: ``{chapter: (Graph API dataset, bulk dataset)}``.
#: The bulk dataset is written in the Graph API dataset's layout (corpus ids as paper ids), so the switch is one
#: line in CHAPTER_DATA — the bulk name in place of the Graph API one — and ``ChapterData.input`` with the old name
#: reads the bulk folder (:meth:`sdr.datasets.ChapterData.input`). FLeW and SciAspect read their bulk datasets by
#: default. SciNCL has no Graph API dataset: its bulk dataset is new (the S2ORC citation graph as an edge list, read
#: by ``sdr graph embed``; the chapter embeds it at ``paper``, CHAPTER_DATA["scincl"]).
BULK_ROUTE: dict[str, tuple[str | None, str]] = {
    "flew": ("s2ag_citations_flew", "s2ag_bulk_flew"),
    "sciaspect": ("s2_citations_thesis", "s2ag_bulk_thesis"),
    "scincl": (None, "s2orc_citation_graph"),
}
#: The Graph API dataset whose folder layout a bulk dataset has (read with the same readers).
SAME_LAYOUT_AS = {bulk: graph_api for graph_api, bulk in BULK_ROUTE.values() if graph_api}


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
    # the thesis' Tables 6.8-6.9 (MDCR); its base model SciBERT (Tables 6.2, 6.8) is the chapter's model_name
    "sciaspect": ("malteos/scincl", "allenai/specter"),
}


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
