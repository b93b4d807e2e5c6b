"""Maps the product's top-level folders into the single import package ``lamarck``.

pyproject.toml holds the metadata; this file only computes the package list, because the
remapped folders' subpackages must be discovered per folder (setuptools' automatic discovery
does not follow ``package-dir`` remapping).
"""

from setuptools import find_packages, setup

ROOTS = {
    "lamarck": "lamarck",
    "lamarck.proto": "proto",
    "lamarck.node": "node",
    "lamarck.registry": "registry",
    "lamarck.consensus": "consensus",
    "lamarck.reputation": "reputation",
    "lamarck.domain": "domain",
    "lamarck.learning": "learning",
    "lamarck.policy": "policy",
    "lamarck.gossip": "gossip",
    "lamarck.health": "health",
    "lamarck.cli": "cli",
    "lamarck.fleet": "fleet",
    "lamarck.sim": "sim",
}

#: Folders that hold only data files shipped inside a package (no ``__init__.py``): listed as
#: packages of their own so that setuptools installs their files without warning about them.
DATA_PACKAGES = {
    "lamarck.node.store.migrations": ["*.sql"],
    "lamarck.node.console.static": ["*.css", "*.js"],
}

packages: list[str] = []
package_dir: dict[str, str] = {}
for package, folder in ROOTS.items():
    package_dir[package] = folder
    packages.append(package)
    packages.extend(f"{package}.{sub}" for sub in find_packages(folder))
packages.extend(DATA_PACKAGES)

setup(
    packages=packages,
    package_dir=package_dir,
    package_data={"": ["py.typed", "*.proto", "*.pyi", "*.json"], **DATA_PACKAGES},
    include_package_data=True,
)
