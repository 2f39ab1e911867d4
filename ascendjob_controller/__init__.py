"""ascendjob-controller: a Kubernetes controller for AscendJob (mindxdl.gitee.com/v1)."""

__version__ = "0.1.0"
