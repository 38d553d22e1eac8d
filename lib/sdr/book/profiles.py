"""Profiles (``profiles.yml``) and the parameters of a chapter at a profile.

``profiles.yml`` holds parameter sets (``smoke``, ``real``, ``paper``), each with a common block and per-chapter
blocks (see the comment at its top). :func:`chapter_parameters` merges them with ``-p`` overrides and refuses
keys the chapter's ``parameters`` cell does not define.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from sdr.book import paths


def load_profiles(path: Path | None = None) -> dict:
    from sdr.jsonio import read_yaml
    from sdr.parameters import YamlLoader

    path = Path(path or paths.PROFILES_FILE)
    try:  # YAML 1.2 core semantics, strict UTF-8, no repeated keys; errors name the file and line
        profiles = read_yaml(path, "the book's profiles (top-level keys chapters and profiles)", YamlLoader)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: profiles file not found") from None
    if not isinstance(profiles, dict) or "profiles" not in profiles or "chapters" not in profiles:
        raise ValueError(f"{path}: expected top-level keys 'chapters' and 'profiles'")
    return profiles


def chapter_names(path: Path | None = None) -> list[str]:
    return list(load_profiles(path)["chapters"])


def notebook_parameters(notebook: Path) -> dict:
    """The names and default values of a notebook's ``parameters`` cell."""
    import papermill

    if not notebook.exists():
        raise FileNotFoundError(f"{notebook}: chapter notebook not found")
    inferred = papermill.inspect_notebook(str(notebook))
    if not inferred:
        raise ValueError(f"{notebook}: no cell tagged 'parameters' (every chapter needs one)")
    return {name: spec["default"] for name, spec in inferred.items()}


def chapter_parameters(chapter: str, profile: str, overrides: Mapping | None = None,
                       profiles_path: Path | None = None, notebook: Path | None = None) -> dict:
    """Parameters for ``chapter`` at ``profile``; unknown keys and missing required values are errors."""
    source = Path(profiles_path or paths.PROFILES_FILE)  # the file actually read, named in the errors
    profiles = load_profiles(source)
    if profile not in profiles["profiles"]:
        raise ValueError(f"unknown profile {profile!r}; {source} defines "
                         f"{sorted(profiles['profiles'])}")
    if chapter not in profiles["chapters"]:
        raise ValueError(f"unknown chapter {chapter!r}; {source} lists {profiles['chapters']}")
    from sdr import parameters as checks

    spec = profiles["profiles"][profile]
    merged, origins = checks.merge_layers([
        (f"profile {profile} of {source.name}", spec.get("parameters")),
        (f"profile {profile}, chapter {chapter} of {source.name}", (spec.get("chapters") or {}).get(chapter)),
        ("-p", overrides)])
    notebook = notebook or paths.NOTEBOOKS / f"{chapter}.ipynb"
    specs = checks.parameter_specs(notebook)
    unknown = sorted(set(merged) - set(specs))
    if unknown:
        raise ValueError(f"{notebook.name}: parameters {unknown} (from profile {profile!r} or -p) are not "
                         f"defined in its parameters cell; it defines {sorted(specs)}")
    missing = sorted(k for k, s in specs.items() if s.default_text == "None" and k not in merged)
    if missing:
        raise ValueError(f"{notebook.name}: parameters {missing} have no value: give them in profile "
                         f"{profile!r} of {source} or with -p NAME VALUE")
    # values typed like the parameters cell's defaults, checked before papermill runs (no half-run notebook)
    checks.check_values(merged, specs, notebook, origins)
    checks.check_rules(merged, checks.parameter_rules(chapter, profiles), notebook, origins)
    return merged


def parse_value(text: str):
    """``-p key value`` values are YAML scalars: 3 → int, 0.5 and 2e-5 → float, true → bool, else str."""
    from sdr.parameters import parse_value as parse

    return parse("?", text)
