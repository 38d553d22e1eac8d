"""The book's machinery, one module per concern; chapters call it as ``from sdr import book; book.X``.

=============== ==========================================================================================
module          holds
=============== ==========================================================================================
``paths``       where the book's files are (``ROOT``, ``NOTEBOOKS``, ``CHAPTERS_OUT``, ``PAPER_TABLES``,
                ``PROFILES_FILE``) and the results store (``results_dir``, ``$SDR_RESULTS``)
``profiles``    ``profiles.yml`` and a chapter's parameters at a profile (``chapter_parameters``)
``runs``        ``sdr chapter``: papermill runs, the rebuild fingerprint, executed pages, resumable run folders
``sources``     the real-data root a chapter reads, the caption under its tables, the environment line
``results``     the results store (``save_results``/``load_results``), paper tables, paper-vs-ours tables,
                SciDocs rows
``leaderboard`` the leaderboard row convention, its benchmarks, the Summary's leaderboard tables, and the rows
                of models scored by ``sdr evaluate all`` (``results/external/``)
``status``      the reproduction-status map of the intro page
``render``      cleaned executed pages (progress bars, the profile box), styled tables, heatmaps
``setup_cell``  the Colab setup cell and the book's repository (``_config.yml``)
``chapter``     ``ChapterRun``: a chapter's parameters, data, run folder, caption, training and checks with teeth
``figures``     the chapters' figures, one call each
``summary``     the Summary page's steps: what each chapter stored, the leaderboards, every stored table
=============== ==========================================================================================

The path constants live in :mod:`sdr.book.paths`, where every module reads them when called. ``book.ROOT`` reads
them there and ``book.ROOT = …`` (or ``monkeypatch.setattr(book, "ROOT", …)``) sets them there, so pointing the
book elsewhere through the package reaches every module; ``SDR_BOOK_ROOT`` does it for a new process.
"""

from __future__ import annotations

import sys
import types

from sdr.book import figures, paths, summary
from sdr.book.chapter import ChapterCheckFailed, ChapterRun, Fit, replicas_of_one_corpus, \
    show_paper_vs_ours
from sdr.book.leaderboard import (BENCHMARKS, CSFCUBE_FACETS, EXTERNAL, LEADERBOARD_DATA, base_model_label,
                                  csabstruct_metrics, csabstruct_per_query, csfcube_metrics, csfcube_per_query,
                                  headline_display, headline_table, leaderboard_row, leaderboard_rows,
                                  leaderboard_table, seed_summary, store_external_rows, trained_here,
                                  untrained_reference)
from sdr.book.paths import results_dir
from sdr.book.profiles import chapter_names, chapter_parameters, load_profiles, notebook_parameters, parse_value
from sdr.book.render import (PROFILE_BOX_CLASS, PROFILE_BOX_TAG, clean_outputs, column_decimals, finish_notebook,
                             is_paper_vs_ours, markdown_text, paper_vs_ours_heatmap, profile_box, styled)
from sdr.book.results import (SCIDOCS_COLUMNS, from_jsonable, jsonable, load_results, paper_vs_ours,
                              read_paper_table, save_results, scidocs_row, stored_record)
from sdr.book.runs import (KERNEL_ENVIRONMENT, READS_RESULTS, chapter_fingerprint, register, run_chapter, run_dir,
                           stored_fingerprint, write_executed)
from sdr.book.setup_cell import (CONFIG_FILE, PROFILE_TAG, SETUP_TAG, add_setup_cell, device_line, interactive_parameters,
                                 profile_cell_source, repository, set_repository, setup_cell_source)
from sdr.book.sources import caption, environment_line
from sdr.book.status import STATUS_PAGE, reproduction_status, status_markdown, write_status_page

def _path_property(name: str) -> property:
    return property(lambda module: getattr(paths, name), lambda module, value: setattr(paths, name, value),
                    doc=f"sdr.book.paths.{name}, read and set there")


class _Book(types.ModuleType):
    """``sdr.book``, whose path constants are properties reading and setting those of :mod:`sdr.book.paths`."""

    ROOT = _path_property("ROOT")
    NOTEBOOKS = _path_property("NOTEBOOKS")
    CHAPTERS_OUT = _path_property("CHAPTERS_OUT")
    PAPER_TABLES = _path_property("PAPER_TABLES")
    PROFILES_FILE = _path_property("PROFILES_FILE")


sys.modules[__name__].__class__ = _Book
