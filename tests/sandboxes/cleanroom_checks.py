"""What the clean-room tests ask a sandbox, on bwrap and docker alike."""

from __future__ import annotations

import json

from inspect_ai.util import SandboxEnvironment

from docket.sandboxes import CLEAN_PATH

#: Run by the agent: every path a clean exec trusts that the agent could write or create.
TRUSTED_WRITABLE = f"""
import json, os, sys
paths = {CLEAN_PATH.split(":")!r} + [p for p in sys.path if p]
paths += ["/etc/ld.so.preload", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/environment",
          "/etc/bash.bashrc", "/etc/profile", "/usr/bin/env", "/bin/bash", "/bin/mkdir"]
found = []
for path in paths:
    there = os.path.lexists(path)
    if (there and os.access(path, os.W_OK)) or (
        not there and os.access(os.path.dirname(path) or "/", os.W_OK)
    ):
        found.append(path)
print(json.dumps(found))
"""

#: Run by the agent: rc files, a PAM environment, /etc/environment (which fails), all setting
#: what would change a shell or python under the scorer.
PLANT_ENVIRONMENT = """
for f in ~/.bashrc ~/.profile ~/.bash_profile ~/.bash_login; do
  echo 'export BASH_ENV=/workspace/e ENV=/workspace/e PROMPT_COMMAND=x' >> $f
  echo 'export LD_PRELOAD=/workspace/x.so PYTHONPATH=/workspace' >> $f
done
echo 'BASH_ENV DEFAULT=/workspace/e' > ~/.pam_environment
echo 'LD_PRELOAD=/workspace/x.so' >> /etc/environment 2>/dev/null
echo 'exit 0' > /workspace/e
true
"""


async def trusted_writable(sb: SandboxEnvironment) -> list[str]:
    """The trusted paths the agent (an ordinary exec) can write or create in `sb`."""
    result = await sb.exec(["python3", "-I", "-c", TRUSTED_WRITABLE])
    assert result.success, result.stderr
    found = json.loads(result.stdout)
    assert isinstance(found, list)
    return [str(path) for path in found]
