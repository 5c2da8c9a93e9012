"""Every run records its CPU model: bit-identical results hold on one machine only."""

from __future__ import annotations

import platform
from pathlib import Path

from esbench.tracking.store import environment_record
from esbench.utils.machine import cpu_model


def test_cpu_model_is_the_model_name_line_of_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n")
    assert cpu_model(cpuinfo) == "AMD EPYC 7B13"


def test_cpu_model_falls_back_to_platform_without_cpuinfo(tmp_path: Path) -> None:
    assert cpu_model(tmp_path / "missing") == (platform.processor() or platform.machine())
    (tmp_path / "bare").write_text("processor\t: 0\n")
    assert cpu_model(tmp_path / "bare") == (platform.processor() or platform.machine())


def test_every_run_records_this_machines_cpu_model() -> None:
    record = environment_record(1)
    assert record["cpu_model"] == cpu_model() and record["cpu_model"]
