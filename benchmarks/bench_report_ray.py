"""``sweep report`` in-process against ``sweep report --address`` on a local Ray cluster (issue 24).

On one run folder (for example one that ``bench_report_scale.py --root`` left), builds the
report twice, side by side in one run: in this process, then with ``--address`` on a local
Ray cluster of ``--workers`` CPUs started for the measurement (token auth, its files in a
temporary folder). With ``--address`` the report's integrity pass (every part's bytes
checked and its rows hashed again) runs as Ray tasks over groups of parts, PBO's CSCV splits
as tasks over runs of splits and the dimensionality sample's returns as tasks over runs of
configs; the rest of the report runs in the driver either way. Each report runs in a
fresh child whose own wall time and peak RSS are read (the driver's; Ray's workers are
other processes). The two report.json files must be equal apart from ``generated``; the
script says so and exits 1 otherwise. Writes ``report_ray.md`` and ``report_ray.json`` (read by
``project_workers.py``) under ``--out``.

Run inside a loopback-only network namespace (Ray must not bind other addresses)::

    unshare -n sh -c 'ip link set lo up && exec "$@"' _ \\
        python benchmarks/bench_report_ray.py --run-dir runs/scale/run-10000000 --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_report_scale import SWEEP, probed

RAY = [sys.executable, "-m", "ray.scripts.scripts"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _report_doc(folder: Path) -> tuple[dict, dict]:
    """report.json without ``generated``, and ``generated``."""
    doc = json.loads((folder / "report.json").read_text())
    return doc, doc.pop("generated")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("runs/bench/report_ray"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ray-") as tmp:
        token = Path(tmp) / "auth_token"
        token.write_text(secrets.token_hex(32))
        env = {
            **os.environ,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN_PATH": str(token),
            "RAY_TMPDIR": tmp,
        }
        os.environ.update(env)
        here_s, here_mib = probed(
            [*SWEEP, "report", str(args.run_dir), "--quiet", "--out", str(args.out / "here")]
        )
        port = _free_port()
        subprocess.run(
            [
                *RAY,
                "start",
                "--head",
                f"--num-cpus={args.workers}",
                "--node-ip-address=127.0.0.1",
                f"--port={port}",
                "--include-dashboard=false",
                f"--temp-dir={tmp}",
                "--disable-usage-stats",
            ],
            check=True,
            env=env,
            capture_output=True,
        )
        try:
            ray_s, ray_mib = probed(
                [
                    *SWEEP,
                    "report",
                    str(args.run_dir),
                    "--quiet",
                    "--out",
                    str(args.out / "ray"),
                    "--address",
                    f"127.0.0.1:{port}",
                ]
            )
        finally:
            subprocess.run([*RAY, "stop", "--force"], env=env, capture_output=True, check=False)
    here_doc, here_gen = _report_doc(args.out / "here")
    ray_doc, ray_gen = _report_doc(args.out / "ray")
    same = here_doc == ray_doc
    configs = int(here_doc["integrity"]["configs"]["total"])
    lines = [
        f"# sweep report in-process vs on a local Ray cluster of {args.workers} CPUs",
        "",
        f"run folder: {args.run_dir} ({configs:,} configs)",
        f"report.json equal apart from `generated`: {'yes' if same else 'NO'}",
        "",
        "| | in-process | --address (Ray) | Ray / in-process |",
        "|---|---:|---:|---:|",
        f"| wall (s) | {here_s:.1f} | {ray_s:.1f} | {ray_s / here_s:.2f} |",
        f"| driver peak RSS (MiB) | {here_mib:,.0f} | {ray_mib:,.0f} | {ray_mib / here_mib:.2f} |",
        "",
        "| step | in-process s | Ray s | in-process MiB | Ray MiB |",
        "|---|---:|---:|---:|---:|",
    ]
    for step, seconds in here_gen["step_seconds"].items():
        lines.append(
            f"| {step} | {seconds:.1f} | {ray_gen['step_seconds'].get(step, float('nan')):.1f} "
            f"| {here_gen['step_peak_rss_mib'].get(step, 0):,.0f} "
            f"| {ray_gen['step_peak_rss_mib'].get(step, 0):,.0f} |"
        )
    text = "\n".join(lines) + "\n"
    (args.out / "report_ray.md").write_text(text)
    record = {
        "run_dir": str(args.run_dir),
        "configs": configs,
        "workers": args.workers,
        "same_report": same,
        "in_process": {"seconds": here_s, "peak_mib": here_mib, **here_gen},
        "ray": {"seconds": ray_s, "peak_mib": ray_mib, **ray_gen},
    }
    (args.out / "report_ray.json").write_text(json.dumps(record, indent=1) + "\n")
    print(text)
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
