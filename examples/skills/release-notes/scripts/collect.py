"""List the commits merged since a tag: python collect.py v0.1.0"""

import subprocess
import sys

tag = sys.argv[1]
log = subprocess.run(["git", "log", "--merges", "--format=%s", f"{tag}..HEAD"],
                     capture_output=True, text=True, check=True)
print(log.stdout, end="")
