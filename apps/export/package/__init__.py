"""The replication package: a zip holding a whole study, and the way back from one (docs/export.md).

`build_package` writes it (``export_dataset STUDY --format zip``); `import_study` turns one into a new
study (``import_study STUDY PACKAGE.zip``), losslessly: exporting the imported study gives the same
dataset files. Modules: `build` (writing a package), `report` (its README and agreement Markdown, pure
text), `restore` (import_study: check everything, then write in one transaction), with the checks in
`reading` (zip, manifest, study, rounds, items), `codebook_check` and `labels` (annotations and
decisions), and the writes in `writing` (users, codebook), `restore_items` and `restore_labels`, all in
bulk (`bulk`).
"""

from .build import DATASET_FILES, MANIFEST, PACKAGE_FORMAT, build_package
from .restore import ImportedStudy, PackageError, import_study

__all__ = [
    "DATASET_FILES",
    "MANIFEST",
    "PACKAGE_FORMAT",
    "ImportedStudy",
    "PackageError",
    "build_package",
    "import_study",
]
