"""The wheel carries the example project beside the code, in components/project/: Pulumi.yaml, the program
(__main__.py), the committed stack files and examples/, so that `python -m components.plan STACK` plans an example
stack where no checkout is (components/plan.py ROOT). Everything else is in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PROJECT_FILES = (
    "Pulumi.yaml",
    "__main__.py",
    "Pulumi.cluster.yaml",
    "Pulumi.gke.yaml",
    "Pulumi.gke-mps.yaml",
    "Pulumi.gke-time-sharing.yaml",
    "Pulumi.k3s.yaml",
    "examples/kubeconfig.placeholder.yaml",
)
"""Named one by one: a stack file of a user's own beside them (its project, its encryption salt) stays out.
MANIFEST.in names the same files for an sdist; tests/test_wheel.py holds both to the committed ones."""


class BuildPyWithProject(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install plans the checkout itself
            return
        target = Path(self.build_lib) / "components" / "project"
        for name in PROJECT_FILES:
            self.mkpath(str((target / name).parent))
            self.copy_file(str(HERE / name), str(target / name))


setup(cmdclass={"build_py": BuildPyWithProject})
