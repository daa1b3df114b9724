"""Installs zfetch_record.pth beside the package (site-packages), which starts a recording when
ZFETCH_RECORD is set; pyproject.toml has everything else."""

import os

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithPth(build_py):

    def run(self):
        super().run()
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zfetch_record.pth")
        self.copy_file(source, os.path.join(self.build_lib, "zfetch_record.pth"))


setup(cmdclass={"build_py": BuildWithPth})
