"""Writes husk-bench's local wheels: `mkwheels.py DIR` puts three tiny
pure-Python packages in DIR, the first depending on the other two, so that
`pip install --no-index --find-links DIR --target T benchpkg_a` resolves a
dependency graph and unpacks three wheels without the network. Written by
hand (a wheel is a zip with a RECORD), so no build backend is needed."""

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

PACKAGES = {
    "benchpkg_a": ["benchpkg_b", "benchpkg_c"],
    "benchpkg_b": [],
    "benchpkg_c": [],
}
VERSION = "1.0"


def digest(data):
    raw = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def wheel(out, name, requires):
    info = f"{name}-{VERSION}.dist-info"
    files = {
        f"{name}/__init__.py": f'"""{name}: a husk-bench test package."""\n\nVALUE = {len(name)}\n',
        f"{name}/util.py": "def double(x):\n    return 2 * x\n" * 20,
        f"{info}/METADATA": "Metadata-Version: 2.1\n"
        + f"Name: {name}\nVersion: {VERSION}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: husk-bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/top_level.txt": f"{name}\n",
    }
    record = [f"{path},{digest(text.encode())},{len(text.encode())}" for path, text in files.items()]
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    with zipfile.ZipFile(out / f"{name}-{VERSION}-py3-none-any.whl", "w", zipfile.ZIP_DEFLATED) as z:
        for path, text in files.items():
            z.writestr(path, text)


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, requires in PACKAGES.items():
        wheel(out, name, requires)


main()
