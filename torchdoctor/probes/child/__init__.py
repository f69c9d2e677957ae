"""Code that runs in the probe child: the interpreter being diagnosed, not torchdoctor's own.

That interpreter may be another Python version without torchdoctor installed, so these modules
use the standard library only (torch and the user's code are imported inside functions), import
each other relatively, and never import torchdoctor's parent-side code. torchdoctor itself may
import them too (``locate``, ``torch_probe.package_facts``): they are plain stdlib modules.
The parent starts one with ``runner.child_argv``, which loads this folder as a package under a
private name without putting it on the child's ``sys.path``.
"""
