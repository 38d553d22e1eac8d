"""The packages split by what changes them (issue 31) read as the modules they replaced: every public name a
submodule defines is the package's attribute too, as the same object (one registry, one policy state), and no
submodule is named like one of those names (``sdr.datasets.fetch`` must stay the function)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil

import pytest

PACKAGES = ("sdr.datasets", "sdr.samplers", "sdr.graph", "sdr.corpus", "sdr.facets")


def defined_public_names(module) -> dict[str, object]:
    """Public names a module defines itself (functions, classes, constants), not the ones it imports."""
    names = set()
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
    return {name: getattr(module, name) for name in sorted(names) if not name.startswith("_")}


@pytest.mark.parametrize("package_name", PACKAGES)
def test_every_public_name_is_reexported_as_the_same_object(package_name):
    package = importlib.import_module(package_name)
    submodules = [info.name for info in pkgutil.iter_modules(package.__path__)]
    assert submodules, f"{package_name} has no submodules"
    missing, different = [], []
    for submodule_name in submodules:
        submodule = importlib.import_module(f"{package_name}.{submodule_name}")
        for name, value in defined_public_names(submodule).items():
            if not hasattr(package, name):
                missing.append(f"{submodule_name}.{name}")
            elif getattr(package, name) is not value:
                different.append(f"{submodule_name}.{name}")
    assert not missing, f"{package_name} does not re-export {missing}"
    assert not different, f"{package_name}'s attribute is another object than {different}"
    for name in getattr(package, "__all__", ()):
        assert hasattr(package, name), f"{package_name}.__all__ names {name}, which it lacks"


@pytest.mark.parametrize("package_name", PACKAGES)
def test_no_submodule_shadows_a_public_name(package_name):
    package = importlib.import_module(package_name)
    for info in pkgutil.iter_modules(package.__path__):
        assert inspect.ismodule(getattr(package, info.name)), (
            f"{package_name}.{info.name} is both a submodule and a public name: `import {package_name}.{info.name}` "
            f"and monkeypatching through it would reach the wrong object")


def test_the_shared_state_exists_once():
    from sdr import datasets, samplers
    from sdr.datasets import policy, registry, status

    assert datasets.DATASETS is registry.DATASETS and datasets.CHAPTER_DATA is status.CHAPTER_DATA
    assert policy.CHAPTER_DATA is registry.CHAPTER_DATA
    datasets.activate(datasets.policy_for("smoke"))
    try:
        assert datasets.active_policy() is policy.active_policy() and policy._active_policy.profile == "smoke"
    finally:
        datasets.activate(None)
    assert samplers.Triplet is importlib.import_module("sdr.samplers.bands").Triplet
