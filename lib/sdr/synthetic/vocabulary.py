"""English vocabularies of the synthetic corpus: MAG-like fields, their sub-communities, names.

Every word list here was written for this project. A field has its own terms, venues and
measures; each community (sub-field) has topic terms, method terms and data terms, so that
papers of one community share vocabulary (what a pretrained encoder can pick up) while
citations add a signal the text only partly carries.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CommunityVocabulary:
    """Words of one sub-community: what it studies, how, and on what data."""

    name: str
    topics: tuple[str, ...]
    methods: tuple[str, ...]
    data: tuple[str, ...]


@dataclass(frozen=True)
class FieldVocabulary:
    """Words of one MAG-like field of study."""

    name: str
    terms: tuple[str, ...]
    venues: tuple[str, ...]
    measures: tuple[str, ...]
    communities: tuple[CommunityVocabulary, ...]


def _c(name: str, topics: str, methods: str, data: str) -> CommunityVocabulary:
    split = lambda text: tuple(item.strip() for item in text.split(";") if item.strip())  # noqa: E731
    return CommunityVocabulary(name, split(topics), split(methods), split(data))


def _f(name: str, terms: str, venues: str, measures: str, *communities: CommunityVocabulary) -> FieldVocabulary:
    split = lambda text: tuple(item.strip() for item in text.split(";") if item.strip())  # noqa: E731
    return FieldVocabulary(name, split(terms), split(venues), split(measures), tuple(communities))


FIELDS: tuple[FieldVocabulary, ...] = (
    _f(
        "Computer Science",
        "algorithms; computational cost; software systems; scalability; benchmarks; large datasets; "
        "representation learning; neural networks; optimisation; inference; data structures; generalisation",
        "Conference on Computational Learning; Journal of Computing Research; Symposium on Intelligent Systems",
        "accuracy; F1 score; runtime; error rate",
        _c("image segmentation",
           "image segmentation; semantic segmentation; pixel labelling; object boundaries; scene parsing; "
           "instance masks; medical image segmentation; foreground extraction; superpixels; panoptic segmentation",
           "fully convolutional network; encoder-decoder architecture; conditional random field; "
           "dilated convolutions; U-shaped network; graph cut",
           "street scene images; annotated masks; intersection over union; aerial photographs"),
        _c("machine translation",
           "machine translation; low-resource languages; word alignment; sentence translation; "
           "multilingual models; translation quality; subword vocabulary; document-level translation; "
           "back-translation; domain adaptation of translation",
           "sequence-to-sequence model; attention mechanism; transformer decoder; beam search; "
           "byte-pair encoding; phrase-based decoder",
           "parallel corpora; BLEU scores; news translation test sets; bilingual dictionaries"),
        _c("reinforcement learning",
           "reinforcement learning; reward shaping; policy optimisation; exploration strategies; "
           "multi-agent coordination; sample efficiency; continuous control; value estimation; "
           "sparse rewards; offline policies",
           "policy gradient; Q-learning; actor-critic algorithm; Monte Carlo tree search; "
           "temporal difference learning; model-based planning",
           "simulated robot tasks; Atari games; episode returns; grid worlds"),
        _c("information retrieval",
           "document retrieval; query expansion; relevance ranking; search engines; recommendation; "
           "click models; passage ranking; citation recommendation; dense retrieval; query logs",
           "learning to rank; inverted index; BM25 weighting; dual encoder; relevance feedback; "
           "matrix factorisation",
           "query relevance judgements; mean average precision; search sessions; user clicks"),
    ),
    _f(
        "Medicine",
        "patients; clinical outcomes; hospital admissions; treatment; mortality; randomised trials; "
        "cohort studies; diagnosis; therapy; public health; adverse events; comorbidities",
        "Journal of Clinical Medicine Research; International Medical Review; Annals of Patient Care",
        "hazard ratio; odds ratio; survival rate; relative risk",
        _c("cardiology",
           "heart failure; atrial fibrillation; coronary artery disease; myocardial infarction; "
           "blood pressure; cardiac arrhythmia; ventricular function; stroke prevention; "
           "anticoagulation; cardiovascular risk",
           "echocardiography; electrocardiogram monitoring; percutaneous coronary intervention; "
           "beta blocker therapy; cardiac magnetic resonance; statin treatment",
           "ejection fraction; cardiac registries; troponin levels; hypertensive patients"),
        _c("oncology",
           "breast cancer; tumour growth; metastasis; chemotherapy resistance; lung carcinoma; "
           "immunotherapy; tumour microenvironment; cancer screening; radiotherapy; leukaemia",
           "checkpoint inhibitors; targeted therapy; tumour biopsy; radiation dosing; "
           "adjuvant chemotherapy; liquid biopsy",
           "progression-free survival; tumour registries; biopsy samples; cancer cohorts"),
        _c("infectious diseases",
           "viral infection; antibiotic resistance; hepatitis; tuberculosis; vaccination; "
           "sepsis; influenza transmission; HIV treatment; hospital-acquired infection; malaria",
           "antiviral therapy; vaccine trials; blood cultures; antimicrobial stewardship; "
           "contact tracing; serological testing",
           "viral load; infection rates; surveillance data; vaccination coverage"),
        _c("diabetes and metabolism",
           "type 2 diabetes; insulin resistance; glycaemic control; obesity; metabolic syndrome; "
           "diabetic nephropathy; chronic kidney disease; lipid metabolism; gestational diabetes; "
           "diabetic retinopathy",
           "insulin therapy; lifestyle intervention; glucose monitoring; metformin treatment; "
           "bariatric surgery; dietary counselling",
           "HbA1c levels; body mass index; fasting glucose; renal function"),
    ),
    _f(
        "Biology",
        "organisms; gene expression; cells; proteins; evolution; species; genomes; molecular mechanisms; "
        "phenotypes; populations; signalling pathways; regulation",
        "Journal of Molecular and Cellular Biology; Biological Systems Letters; Review of Life Sciences",
        "expression levels; fold change; fitness; survival",
        _c("genomics",
           "genome sequencing; gene regulation; transcription factors; single-cell transcriptomes; "
           "genetic variants; chromatin accessibility; non-coding RNA; gene networks; "
           "epigenetic marks; alternative splicing",
           "RNA sequencing; genome-wide association study; CRISPR screening; ChIP sequencing; "
           "variant calling; sequence alignment",
           "sequencing reads; reference genomes; expression atlases; variant catalogues"),
        _c("neuroscience",
           "synaptic plasticity; neural circuits; cortical neurons; memory formation; "
           "neurotransmitter release; sensory processing; neuronal firing; hippocampus; "
           "neurodegeneration; motor control",
           "patch clamp recording; calcium imaging; optogenetic stimulation; electrophysiology; "
           "brain slice preparation; tract tracing",
           "spike trains; mouse models; firing rates; imaging sessions"),
        _c("ecology",
           "biodiversity; species distribution; habitat loss; predator-prey dynamics; "
           "plant communities; climate change impacts; pollination; invasive species; "
           "forest ecosystems; population dynamics",
           "field surveys; species distribution modelling; mark-recapture; remote sensing of habitats; "
           "occupancy models; transect sampling",
           "species abundance; field plots; long-term monitoring; trait databases"),
        _c("microbiology",
           "bacterial communities; gut microbiome; biofilm formation; pathogen virulence; "
           "quorum sensing; microbial metabolism; phage infection; host-microbe interactions; "
           "antibiotic tolerance; soil bacteria",
           "16S rRNA sequencing; metagenomic assembly; bacterial culture; gnotobiotic mice; "
           "growth assays; fluorescence microscopy",
           "microbial isolates; taxonomic profiles; colony counts; stool samples"),
    ),
    _f(
        "Physics",
        "physical systems; energy; particles; fields; quantum states; measurements; simulations; "
        "symmetry; interactions; theoretical models; experiments; scaling laws",
        "Physical Review Letters of Science; Journal of Theoretical and Applied Physics; Physics Reports Quarterly",
        "cross section; signal-to-noise ratio; uncertainty; critical temperature",
        _c("quantum information",
           "quantum entanglement; qubit coherence; quantum error correction; quantum algorithms; "
           "quantum communication; decoherence; quantum gates; superconducting qubits; "
           "quantum key distribution; quantum simulation",
           "tensor network simulation; randomised benchmarking; quantum state tomography; "
           "variational quantum circuits; ion trap control; surface code decoding",
           "gate fidelities; qubit arrays; Bell measurements; coherence times"),
        _c("astrophysics",
           "galaxy formation; dark matter; black holes; gravitational waves; stellar evolution; "
           "cosmic microwave background; supernovae; exoplanets; galaxy clusters; cosmic inflation",
           "N-body simulation; spectroscopic survey; gravitational lensing analysis; "
           "radio interferometry; photometric redshift estimation; Bayesian parameter inference",
           "sky surveys; telescope observations; light curves; redshift catalogues"),
        _c("condensed matter",
           "superconductivity; topological insulators; magnetic order; phase transitions; "
           "electron correlations; spin liquids; graphene; charge density waves; "
           "quantum Hall effect; lattice vibrations",
           "density functional theory; neutron scattering; angle-resolved photoemission; "
           "Monte Carlo simulation; renormalisation group; transport measurements",
           "single crystals; resistivity curves; phase diagrams; band structures"),
        _c("particle physics",
           "Higgs boson; neutrino oscillations; dark matter searches; quark-gluon plasma; "
           "electroweak symmetry; lepton flavour; collider signatures; proton structure; "
           "supersymmetry; jet production",
           "event reconstruction; lattice QCD; detector calibration; effective field theory; "
           "jet clustering; likelihood fits",
           "collision events; detector data; luminosity; decay channels"),
    ),
    _f(
        "Chemistry",
        "molecules; reactions; compounds; synthesis; solvents; chemical bonds; kinetics; "
        "spectroscopy; reaction mechanisms; selectivity; yields; structures",
        "Journal of Chemical Science; Chemical Communications Review; Molecular Chemistry Letters",
        "reaction yield; selectivity; binding energy; turnover frequency",
        _c("catalysis",
           "heterogeneous catalysis; catalytic activity; active sites; hydrogen evolution; "
           "carbon dioxide reduction; enzyme catalysis; cross-coupling reactions; "
           "photocatalysis; oxidation reactions; catalyst stability",
           "palladium catalyst; kinetic isotope experiments; operando spectroscopy; "
           "transition state calculations; catalyst screening; ligand design",
           "turnover numbers; catalyst loadings; reaction conditions; conversion rates"),
        _c("organic synthesis",
           "total synthesis; natural products; stereoselective reactions; asymmetric synthesis; "
           "protecting groups; ring formation; chiral compounds; reaction cascades; "
           "functional group tolerance; drug-like molecules",
           "chiral auxiliary; organocatalytic reaction; retrosynthetic analysis; "
           "flash chromatography; nuclear magnetic resonance; X-ray crystallography",
           "enantiomeric excess; isolated yields; crude mixtures; substrate scope"),
        _c("computational chemistry",
           "molecular dynamics; protein folding; free energy landscapes; solvation; "
           "electronic structure; drug binding; force fields; excited states; "
           "reaction pathways; molecular docking",
           "ab initio calculations; coupled cluster theory; enhanced sampling; "
           "machine-learned potentials; docking scores; hybrid QM/MM",
           "simulation trajectories; binding affinities; benchmark molecules; energy barriers"),
        _c("electrochemistry",
           "lithium-ion batteries; electrode materials; electrolyte stability; fuel cells; "
           "corrosion; redox flow batteries; supercapacitors; oxygen reduction; "
           "solid electrolytes; charge transfer",
           "cyclic voltammetry; impedance spectroscopy; galvanostatic cycling; "
           "rotating disc electrode; in situ diffraction; electrodeposition",
           "capacity retention; current densities; charge cycles; overpotentials"),
    ),
    _f(
        "Economics",
        "markets; prices; households; firms; economic growth; policy; incentives; welfare; "
        "labour supply; consumption; investment; regulation",
        "Journal of Economic Studies; Review of Applied Economics; Quarterly Economic Letters",
        "elasticity; welfare gains; treatment effect; standard errors",
        _c("labour economics",
           "minimum wage; unemployment; labour market outcomes; wage inequality; "
           "job search; returns to education; immigration; gender pay gap; "
           "worker mobility; union membership",
           "difference-in-differences design; instrumental variables; matched employer-employee data; "
           "regression discontinuity; search model; panel regression",
           "earnings records; employment surveys; census microdata; payroll data"),
        _c("monetary economics",
           "monetary policy; inflation expectations; interest rates; central bank communication; "
           "exchange rates; money demand; financial stability; quantitative easing; "
           "price stickiness; business cycles",
           "vector autoregression; dynamic stochastic general equilibrium model; "
           "local projections; Taylor rule estimation; event study; Bayesian estimation",
           "macroeconomic time series; policy announcements; yield curves; inflation data"),
        _c("development economics",
           "poverty reduction; microfinance; agricultural productivity; cash transfers; "
           "school enrolment; child nutrition; rural credit; migration decisions; "
           "land rights; informal employment",
           "randomised field experiment; household survey analysis; structural estimation; "
           "propensity score matching; cluster randomisation; lottery design",
           "village surveys; household consumption; programme rollout; administrative records"),
        _c("industrial organisation",
           "market power; mergers; entry and exit; price discrimination; platform competition; "
           "vertical integration; collusion; product differentiation; advertising; "
           "antitrust enforcement",
           "demand estimation; discrete choice model; auction model; merger simulation; "
           "structural model of entry; Bertrand competition",
           "scanner data; firm-level prices; market shares; auction bids"),
    ),
    _f(
        "Psychology",
        "participants; behaviour; cognition; emotions; mental health; attitudes; development; "
        "individual differences; social context; perception; decision making; wellbeing",
        "Journal of Psychological Science; Behavioural Research Review; Cognition and Mind Letters",
        "effect size; reaction time; correlation coefficient; reliability",
        _c("cognitive psychology",
           "working memory; selective attention; cognitive load; visual search; "
           "task switching; episodic memory; reading comprehension; mental imagery; "
           "executive function; perceptual learning",
           "reaction time paradigm; eye tracking; dual-task experiment; drift diffusion model; "
           "n-back task; signal detection analysis",
           "response latencies; recall scores; trial accuracy; fixation durations"),
        _c("clinical psychology",
           "depression; anxiety disorders; post-traumatic stress; cognitive behavioural therapy; "
           "suicidal ideation; eating disorders; psychotherapy outcomes; emotion regulation; "
           "substance use; relapse prevention",
           "randomised clinical trial; structured clinical interview; symptom questionnaires; "
           "mindfulness intervention; exposure therapy; ecological momentary assessment",
           "symptom scores; treatment dropout; clinical samples; remission rates"),
        _c("social psychology",
           "prejudice; social identity; persuasion; intergroup contact; conformity; "
           "moral judgement; stereotypes; prosocial behaviour; self-esteem; trust",
           "implicit association test; vignette experiment; online survey experiment; "
           "priming manipulation; multilevel modelling; longitudinal survey",
           "attitude ratings; survey responses; online samples; group evaluations"),
        _c("developmental psychology",
           "language acquisition; child development; parenting styles; adolescent risk taking; "
           "theory of mind; attachment; early literacy; peer relationships; infant cognition; "
           "school readiness",
           "looking time paradigm; longitudinal cohort; parent reports; observational coding; "
           "growth curve modelling; standardised assessment",
           "vocabulary scores; infant looking times; classroom observations; parent questionnaires"),
    ),
    _f(
        "Materials Science",
        "materials; microstructure; mechanical properties; thin films; fabrication; composites; "
        "crystal structure; surfaces; durability; processing; defects; nanostructures",
        "Journal of Advanced Materials Research; Materials Letters Review; Progress in Materials Engineering",
        "tensile strength; hardness; conductivity; porosity",
        _c("polymers",
           "polymer blends; self-healing polymers; hydrogels; block copolymers; polymer degradation; "
           "elastomers; biodegradable plastics; polymer crystallisation; cross-linking; viscoelasticity",
           "rheometry; gel permeation chromatography; differential scanning calorimetry; "
           "controlled radical polymerisation; electrospinning; coarse-grained simulation",
           "molecular weights; glass transition temperatures; stress-strain curves; swelling ratios"),
        _c("metallurgy",
           "high-entropy alloys; grain boundaries; fatigue cracking; additive manufacturing; "
           "steel microstructure; creep resistance; phase precipitation; corrosion resistance; "
           "dislocation dynamics; titanium alloys",
           "electron backscatter diffraction; heat treatment; laser powder bed fusion; "
           "nanoindentation; crystal plasticity modelling; transmission electron microscopy",
           "alloy compositions; fatigue life; grain sizes; yield stress"),
        _c("semiconductors",
           "perovskite solar cells; thin-film transistors; quantum dots; band gap engineering; "
           "charge carrier mobility; light-emitting diodes; two-dimensional materials; "
           "photodetectors; doping; interface defects",
           "chemical vapour deposition; atomic layer deposition; photoluminescence spectroscopy; "
           "Hall effect measurement; molecular beam epitaxy; device simulation",
           "power conversion efficiency; carrier lifetimes; device arrays; absorption spectra"),
        _c("ceramics",
           "oxide ceramics; sintering; fracture toughness; piezoelectric materials; "
           "thermal barrier coatings; porous ceramics; ionic conductors; glass ceramics; "
           "ferroelectric domains; ceramic membranes",
           "spark plasma sintering; X-ray diffraction refinement; sol-gel processing; "
           "impedance analysis; indentation testing; tape casting",
           "relative densities; grain growth; dielectric constants; crack lengths"),
    ),
    _f(
        "Mathematics",
        "theorems; proofs; equations; operators; spaces; bounds; structures; conjectures; "
        "functions; convergence; invariants; estimates",
        "Journal of Pure and Applied Mathematics; Annals of Mathematical Analysis; Mathematical Letters Review",
        "convergence rate; error bound; dimension; constant",
        _c("graph theory",
           "graph colouring; random graphs; extremal graph theory; spanning trees; "
           "graph minors; Ramsey numbers; network flows; planar graphs; matchings; expander graphs",
           "probabilistic method; regularity lemma; spectral analysis of graphs; "
           "discharging argument; combinatorial counting; flag algebras",
           "chromatic numbers; vertex degrees; edge densities; extremal constructions"),
        _c("partial differential equations",
           "Navier-Stokes equations; elliptic equations; wave propagation; regularity of solutions; "
           "free boundary problems; nonlinear diffusion; well-posedness; blow-up of solutions; "
           "conservation laws; homogenisation",
           "energy estimates; variational methods; finite element discretisation; "
           "Sobolev embeddings; fixed point argument; maximum principle",
           "weak solutions; boundary conditions; initial data; numerical grids"),
        _c("probability theory",
           "random walks; stochastic processes; large deviations; martingales; "
           "random matrices; percolation; Brownian motion; mixing times; branching processes; "
           "concentration inequalities",
           "coupling argument; stochastic calculus; moment method; renewal theory; "
           "Markov chain analysis; entropy method",
           "limiting distributions; tail probabilities; sample paths; hitting times"),
        _c("number theory",
           "prime numbers; elliptic curves; modular forms; Diophantine equations; "
           "L-functions; class groups; arithmetic progressions; zeta functions; "
           "algebraic number fields; rational points",
           "sieve methods; circle method; p-adic analysis; exponential sum estimates; "
           "Galois representations; analytic continuation",
           "prime gaps; conductors; height bounds; numerical tables"),
    ),
    _f(
        "Sociology",
        "society; social inequality; institutions; communities; social networks; families; "
        "education; work; culture; social class; neighbourhoods; identity",
        "Journal of Social Research; Sociological Review Quarterly; Society and Culture Letters",
        "odds ratio; share of respondents; segregation index; mobility rate",
        _c("social stratification",
           "intergenerational mobility; educational inequality; wealth gaps; occupational status; "
           "class reproduction; income mobility; school tracking; meritocracy; social origin; "
           "labour market entry",
           "log-linear models; sibling correlations; sequence analysis; panel survey analysis; "
           "decomposition methods; cohort comparison",
           "household panels; occupational codes; school records; national surveys"),
        _c("urban sociology",
           "residential segregation; gentrification; neighbourhood effects; housing markets; "
           "urban poverty; public space; suburbanisation; eviction; crime and place; "
           "community organisations",
           "spatial regression; ethnographic fieldwork; neighbourhood surveys; mapping of census tracts; "
           "multilevel models; qualitative interviews",
           "census tracts; housing records; neighbourhood surveys; eviction filings"),
        _c("sociology of migration",
           "immigrant integration; transnational families; ethnic enclaves; second generation; "
           "refugee resettlement; remittances; citizenship; discrimination in hiring; "
           "language assimilation; return migration",
           "field experiment on hiring; life-history interviews; longitudinal immigrant survey; "
           "network analysis; comparative case study; event history analysis",
           "immigrant cohorts; survey waves; interview transcripts; hiring callbacks"),
        _c("sociology of health",
           "health disparities; social determinants of health; stigma; caregiving; "
           "health behaviours; life course; ageing; loneliness; access to care; chronic illness",
           "life course analysis; mixed methods design; growth curve models; "
           "in-depth interviews; survey experiments; cumulative disadvantage models",
           "health surveys; ageing cohorts; self-rated health; interview data"),
    ),
)

MESH_LABELS: tuple[str, ...] = (
    "Cardiovascular Diseases",
    "Chronic Kidney Disease",
    "Chronic Respiratory Diseases",
    "Diabetes Mellitus",
    "Digestive System Diseases",
    "Hepatitis",
    "Hypertension",
    "Metabolic Diseases",
    "Neoplasms",
    "Substance-Related Disorders",
    "Virus Diseases",
)
"""Eleven MeSH-like labels, as in SciDocs' MeSH classification task (Cohan et al., 2020)."""

MESH_FIELDS = ("Medicine", "Biology", "Chemistry")
"""Fields whose papers get a MeSH-like label (others get ``None``)."""

GENERIC_TERMS: tuple[str, ...] = (
    "approach", "framework", "analysis", "study", "estimator", "procedure", "pipeline", "measure",
    "model", "evaluation", "setting", "criterion", "design", "formulation", "baseline", "protocol",
)
"""Academic words every field shares (they make texts look alike across communities)."""

ADJECTIVES: tuple[str, ...] = (
    "robust", "efficient", "scalable", "novel", "simple", "unified", "principled", "practical",
    "interpretable", "adaptive", "systematic", "comprehensive",
)

FIRST_NAMES: tuple[str, ...] = (
    "Ana", "Bao", "Carla", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kira",
    "Luca", "Mara", "Nikhil", "Olga", "Pedro", "Quinn", "Rosa", "Samir", "Tanja", "Uma", "Victor",
    "Wen", "Ximena", "Yusuf", "Zofia", "Amir", "Beatriz", "Chen", "Dana", "Emeka", "Freya",
)

LAST_NAMES: tuple[str, ...] = (
    "Abara", "Bergström", "Castillo", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito",
    "Jansen", "Kowalski", "Lindqvist", "Moreau", "Nakamura", "Okafor", "Petrov", "Quintero", "Rossi",
    "Schmidt", "Tanaka", "Umarov", "Varga", "Wójcik", "Xu", "Yilmaz", "Zhang", "Almeida", "Brandt",
    "Chowdhury", "Demir", "Esposito", "Fernandes", "Gupta", "Horvath", "Iqbal", "Jovanovic", "Kim",
    "Lopez", "Mensah", "Novak", "Oliveira", "Park", "Ramos", "Santos", "Tran", "Vogel", "Weber",
)
