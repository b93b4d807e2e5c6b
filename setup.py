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
}

packages: list[str] = []
package_dir: dict[str, str] = {}
for package, folder in ROOTS.items():
    package_dir[package] = folder
    packages.append(package)
    packages.extend(f"{package}.{sub}" for sub in find_packages(folder))

setup(
    packages=packages,
    package_dir=package_dir,
    package_data={
        "": ["py.typed", "*.proto", "*.sql", "migrations/*.sql", "*.pyi", "*.json"],
        # The operator console's stylesheet and script (lamarck/node/console/static/).
        "lamarck.node.console": ["static/*.css", "static/*.js"],
    },
    include_package_data=True,
)
