"""The composition layer: the only code that turns config into component args.

One module per layer, each `config → args → component → facts`: platform.py (where Kubernetes comes from),
toolkit.py (who provides the NVIDIA container toolkit), sharing.py (what makes GPUs shareable), proof.py (the
proof and its verdict), guard.py (the admission guard), images.py (what the stack pulls, and from where).
Components below take typed args and facts and never see the config.
"""

from components.compose.guard import guard
from components.compose.images import images
from components.compose.platform import platform
from components.compose.proof import proof
from components.compose.sharing import sharing
from components.compose.toolkit import toolkit

__all__ = ["guard", "images", "platform", "proof", "sharing", "toolkit"]
