"""Output for CI systems: JUnit XML (test reports in GitLab, Jenkins, Azure, CircleCI...) and
JSON Lines (one finding per line, for streaming into other tools)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Iterable, Sequence

from ..engine.files import FileReport
from ..findings import Finding
from .output import finding_json, location

# characters XML 1.0 cannot carry, even escaped
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def render_junit(reports: Sequence[FileReport]) -> str:
    """One <testsuite> per checked file: a failing <testcase> per finding (named by its
    code and position), or one passing <testcase> for a file without findings; a file that
    gradlint failed on is an <error>."""
    suites = ET.Element("testsuites", name="gradlint")
    total = failures = errors = 0
    for report in reports:
        suite = ET.SubElement(suites, "testsuite", name=_xml_text(report.display))
        cases = failed = broken = 0
        for finding in report.findings:
            case = ET.SubElement(suite, "testcase", _case_attributes(finding, report.display))
            failure = ET.SubElement(case, "failure", message=_xml_text(finding.message),
                                    type=finding.code)
            failure.text = _xml_text(f"{location(finding)}: {finding.code} [{finding.name}] "
                                     f"{finding.message}")
            cases += 1
            failed += 1
        if report.internal_error:
            case = ET.SubElement(suite, "testcase", name="gradlint", classname=_xml_text(report.display),
                                 file=_xml_text(report.display))
            ET.SubElement(case, "error", message=_xml_text(f"internal error: {report.internal_error}"),
                          type="internal-error")
            cases += 1
            broken += 1
        elif not report.findings:
            ET.SubElement(suite, "testcase", name="gradlint", classname=_xml_text(report.display),
                          file=_xml_text(report.display))
            cases += 1
        suite.set("tests", str(cases))
        suite.set("failures", str(failed))
        suite.set("errors", str(broken))
        suite.set("skipped", "0")
        total, failures, errors = total + cases, failures + failed, errors + broken
    suites.set("tests", str(total))
    suites.set("failures", str(failures))
    suites.set("errors", str(errors))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")


def _case_attributes(finding: Finding, display: str) -> dict[str, str]:
    cell = "" if finding.cell is None else f"cell {finding.cell + 1}:"
    position = f"{cell}{finding.range.start.line}:{finding.range.start.column + 1}"
    attributes = {
        "name": _xml_text(f"{finding.code} {finding.name} at {position}"),
        "classname": _xml_text(display),
        "file": _xml_text(display),
    }
    if finding.cell is None:
        attributes["line"] = str(finding.range.start.line)
    return attributes


def render_json_lines(findings: Iterable[Finding]) -> list[str]:
    """One compact JSON object per finding (the fields of `--format json`)."""
    return [json.dumps(finding_json(f), ensure_ascii=False, separators=(",", ":")) for f in findings]
