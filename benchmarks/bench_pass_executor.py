"""``sweep verify``, ``report`` or ``status`` with ``--executor local``, ``ray`` and ``auto``.

On one run folder (for example one that ``bench_report_scale.py --root`` left), runs the
command three times side by side in one run: in-process (``--executor local``), on a local
Ray cluster of ``--workers`` CPUs that the command starts and stops (``--executor ray``: its
start-up is in the wall time, as a user pays it), and with ``--executor auto``, which checks
the first parts here, times them and lets the amortization law choose for the rest. Each
runs in a fresh child whose wall time and peak RSS are read (the driver's; Ray's workers
are other processes). The outputs must agree: verify's and status's printed lines apart from
the line saying where the parts were read, the report's report.json apart from
``generated``; the script says so and exits 1 otherwise (issue 24). Prints a table with the
ratios to in-process and auto's choice, and writes ``pass_executor.md`` and
``pass_executor.json`` under ``--out``.

Run inside a loopback-only network namespace (Ray must not bind other addresses)::

    unshare -n sh -c 'ip link set lo up && exec "$@"' _ \\
        python benchmarks/bench_pass_executor.py --run-dir runs/scale/run-1000000 --command verify
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_report_scale import PROBE, SWEEP

KINDS = ("local", "ray", "auto")


def probed_output(cmd: list[str]) -> tuple[float, float, str]:
    """Run ``cmd`` in a probe child: its wall seconds, peak RSS in MiB and its stdout."""
    lines = subprocess.run(
        [sys.executable, "-c", PROBE, *cmd], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    seconds, mib = lines[-1].split()
    return float(seconds), float(mib), "\n".join(lines[:-1])


#: The line that says where a command read its parts, and the indent of its continuations.
#: ``sweep status`` shows it only when the parts were read on Ray.
WHERE_LINE = {
    "verify": ("executor: ", 10),
    "report": ("executor: ", 10),
    "status": ("parts read:", 15),
}


def split_executor_line(command: str, stdout: str) -> tuple[str, str]:
    """The line saying where the parts were read (unwrapped) and the rest of the output."""
    prefix, indent = WHERE_LINE[command]
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(prefix)), None)
    if start is None:
        return "in-process", stdout
    end = start + 1
    while end < len(lines) and lines[end].startswith(" " * indent) and lines[end][indent] != " ":
        end += 1
    where = " ".join(line.strip() for line in lines[start:end])
    return where, "\n".join(lines[:start] + lines[end:])


def comparable(command: str, stdout: str, out: Path) -> object:
    """What must agree across executors: the printed lines, or report.json less ``generated``."""
    if command != "report":
        return split_executor_line(command, stdout)[1]
    doc = json.loads((out / "report.json").read_text())
    doc.pop("generated")
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--command", choices=tuple(WHERE_LINE), default="verify")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("runs/bench/pass_executor"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    measured: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="ray-") as tmp:
        token = Path(tmp) / "auth_token"
        token.write_text(secrets.token_hex(32))
        os.environ.update(
            {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token), "RAY_TMPDIR": tmp}
        )
        for kind in KINDS:
            out = args.out / f"{args.command}-{kind}"
            cmd = [*SWEEP, args.command, str(args.run_dir), "--executor", kind]
            if kind != "local":
                cmd += ["--workers", str(args.workers)]
            if args.command == "report":
                cmd += ["--quiet", "--out", str(out)]
            seconds, mib, stdout = probed_output(cmd)
            measured[kind] = {
                "seconds": seconds,
                "peak_mib": mib,
                "executor": split_executor_line(args.command, stdout)[0],
                "same": comparable(args.command, stdout, out),
            }
    reference = measured["local"]["same"]
    same = all(m["same"] == reference for m in measured.values())
    base = float(measured["local"]["seconds"])  # type: ignore[arg-type]
    lines = [
        f"# sweep {args.command}: --executor local, ray ({args.workers} CPUs) and auto",
        "",
        f"run folder: {args.run_dir}",
        f"outputs equal: {'yes' if same else 'NO'}",
        "",
        "| --executor | wall (s) | / in-process | driver peak RSS (MiB) |",
        "|---|---:|---:|---:|",
    ]
    for kind, m in measured.items():
        s = float(m["seconds"])  # type: ignore[arg-type]
        lines.append(f"| {kind} | {s:.1f} | {s / base:.2f} | {float(m['peak_mib']):,.0f} |")  # type: ignore[arg-type]
    lines += ["", f"auto: {measured['auto']['executor']}"]
    text = "\n".join(lines) + "\n"
    (args.out / "pass_executor.md").write_text(text)
    record = {
        "run_dir": str(args.run_dir),
        "command": args.command,
        "workers": args.workers,
        "same_output": same,
        **{k: {key: v for key, v in m.items() if key != "same"} for k, m in measured.items()},
    }
    (args.out / "pass_executor.json").write_text(json.dumps(record, indent=1) + "\n")
    print(text)
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
