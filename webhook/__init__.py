"""topospread: a Kubernetes admission webhook for Pod topology spread constraints."""

__version__ = "0.1.0"
