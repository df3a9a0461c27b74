"""The lineage picture of the whole DAG, drawn from dbt's manifest as an SVG file.

Raw sources on the left, then staging, intermediate models and marts, and the exposures (the
consumers) on the right; an arrow for every dependency. The file is generated, never drawn by
hand: `kappa-shop lineage` writes it and `kappa-shop lineage --check` fails when the committed
picture differs from what the manifest gives (CI runs the check).

Layout: each node sits in the column of its longest path from a root (so every arrow points
right); within a column, nodes are ordered by a few sweeps of the barycenter heuristic (the
mean row of their neighbours), which untangles most crossings, with names breaking ties so the
output is the same bytes for the same manifest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from kappa_shop.errors import KappaShopError

PROJECT = "kappa_shop"
PICTURE = Path("docs") / "lineage.svg"

# kind -> (fill, stroke, legend)
KINDS: dict[str, tuple[str, str, str]] = {
    "source": ("#e3f2e1", "#3c8d40", "raw table (source)"),
    "seed": ("#eeeeee", "#777777", "seed"),
    "staging": ("#e1ecf7", "#3a6ea5", "staging model"),
    "intermediate": ("#ece3f5", "#7a4fa3", "intermediate model"),
    "marts": ("#fdebd3", "#c7771c", "mart"),
    "exposure": ("#fbe0e0", "#b23b3b", "exposure (consumer)"),
}
FONT_SIZE = 12
CHARACTER_WIDTH = 7.3  # of the monospace font at FONT_SIZE, for box widths
ROW_HEIGHT = 24
BOX_HEIGHT = 18
COLUMN_GAP = 70
MARGIN = 16
LEGEND_HEIGHT = 40
SWEEPS = 8


@dataclass(frozen=True)
class LineageNode:
    """One box of the picture."""

    unique_id: str
    label: str
    kind: str


@dataclass(frozen=True)
class Lineage:
    """The DAG to draw: nodes and (parent, child) edges by unique id."""

    nodes: dict[str, LineageNode]
    edges: list[tuple[str, str]]


def _kind(resource: dict[str, Any]) -> str:
    resource_type = resource["resource_type"]
    if resource_type == "model":
        folder = resource["original_file_path"].split("/")[1]
        return folder if folder in KINDS else "marts"
    return resource_type


def lineage_from_manifest(manifest: dict[str, Any], package: str = PROJECT) -> Lineage:
    """Sources, seeds, models and exposures of `package` with the dependencies between them
    (tests, hooks and unit tests are not part of the picture)."""
    resources = {
        **manifest["nodes"],
        **manifest["sources"],
        **manifest.get("exposures", {}),
    }
    nodes: dict[str, LineageNode] = {}
    for unique_id, resource in resources.items():
        if resource.get("package_name") != package:
            continue
        if resource["resource_type"] not in ("model", "seed", "source", "exposure"):
            continue
        if resource["resource_type"] == "source":
            label = f"{resource['source_name']}.{resource['name']}"
        else:
            label = resource.get("label") or resource["name"]
        nodes[unique_id] = LineageNode(unique_id, label, _kind(resource))
    edges = sorted(
        {
            (parent, unique_id)
            for unique_id in nodes
            for parent in resources[unique_id].get("depends_on", {}).get("nodes", [])
            if parent in nodes
        }
    )
    return Lineage(nodes, edges)


def _columns(lineage: Lineage) -> list[list[str]]:
    """Nodes by column (longest path from a root), ordered to keep crossings few."""
    parents: dict[str, list[str]] = {unique_id: [] for unique_id in lineage.nodes}
    children: dict[str, list[str]] = {unique_id: [] for unique_id in lineage.nodes}
    for parent, child in lineage.edges:
        parents[child].append(parent)
        children[parent].append(child)
    depth: dict[str, int] = {}

    def depth_of(unique_id: str) -> int:
        if unique_id not in depth:
            depth[unique_id] = 1 + max((depth_of(p) for p in parents[unique_id]), default=-1)
        return depth[unique_id]

    for unique_id in sorted(lineage.nodes):
        depth_of(unique_id)
    last = max(depth.values(), default=0)
    for unique_id, node in lineage.nodes.items():
        if node.kind == "exposure":  # consumers line up at the right edge
            depth[unique_id] = last
    columns: list[list[str]] = [[] for _ in range(last + 1)]
    for unique_id in sorted(
        lineage.nodes, key=lambda u: (lineage.nodes[u].kind, lineage.nodes[u].label)
    ):
        columns[depth[unique_id]].append(unique_id)

    def reorder(column: list[str], neighbours: dict[str, list[str]]) -> list[str]:
        position = {u: row for col in columns for row, u in enumerate(col)}

        def key(unique_id: str) -> tuple[float, str]:
            rows = [position[n] for n in neighbours[unique_id]]
            mean = sum(rows) / len(rows) if rows else float(position[unique_id])
            return (mean, lineage.nodes[unique_id].label)

        return sorted(column, key=key)

    for sweep in range(SWEEPS):
        if sweep % 2 == 0:
            for index in range(1, len(columns)):
                columns[index] = reorder(columns[index], parents)
        else:
            for index in range(len(columns) - 2, -1, -1):
                columns[index] = reorder(columns[index], children)
    return columns


def render_svg(lineage: Lineage) -> str:
    """The picture as SVG text (deterministic for a given lineage)."""
    columns = _columns(lineage)
    widths = [
        max((len(lineage.nodes[u].label) for u in column), default=4) * CHARACTER_WIDTH + 16
        for column in columns
    ]
    tallest = max((len(column) for column in columns), default=1)
    box: dict[str, tuple[float, float, float]] = {}  # unique id -> x, y, width
    x = float(MARGIN)
    for column, width in zip(columns, widths, strict=True):
        offset = (tallest - len(column)) * ROW_HEIGHT / 2  # centre each column vertically
        for row, unique_id in enumerate(column):
            box[unique_id] = (x, MARGIN + LEGEND_HEIGHT + offset + row * ROW_HEIGHT, width)
        x += width + COLUMN_GAP
    total_width = x - COLUMN_GAP + MARGIN
    total_height = MARGIN * 2 + LEGEND_HEIGHT + tallest * ROW_HEIGHT
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_width:.0f}" '
        f'height="{total_height:.0f}" viewBox="0 0 {total_width:.0f} {total_height:.0f}" '
        f'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="{FONT_SIZE}">',
        f"<title>Lineage of the kappa_shop DAG: {len(lineage.nodes)} nodes, "
        f"{len(lineage.edges)} dependencies (generated by kappa-shop lineage)</title>",
        f'<rect width="{total_width:.0f}" height="{total_height:.0f}" fill="#ffffff"/>',
    ]
    legend_x = float(MARGIN)
    for fill, stroke, text in KINDS.values():
        parts.append(
            f'<rect x="{legend_x:.0f}" y="{MARGIN}" width="14" height="14" rx="3" '
            f'fill="{fill}" stroke="{stroke}"/>'
        )
        parts.append(f'<text x="{legend_x + 20:.0f}" y="{MARGIN + 11}">{escape(text)}</text>')
        legend_x += 20 + len(text) * CHARACTER_WIDTH + 24
    parts.append('<g fill="none" stroke="#9aa5b1" stroke-width="1">')
    for parent, child in lineage.edges:
        x1, y1, w1 = box[parent]
        x2, y2, _ = box[child]
        start_x, start_y = x1 + w1, y1 + BOX_HEIGHT / 2
        end_x, end_y = x2, y2 + BOX_HEIGHT / 2
        bend = max((end_x - start_x) / 2, COLUMN_GAP / 2)
        parts.append(
            f'<path d="M{start_x:.1f},{start_y:.1f} C{start_x + bend:.1f},{start_y:.1f} '
            f'{end_x - bend:.1f},{end_y:.1f} {end_x:.1f},{end_y:.1f}"/>'
        )
    parts.append("</g>")
    for unique_id, (left, top, width) in sorted(box.items()):
        node = lineage.nodes[unique_id]
        fill, stroke, _ = KINDS[node.kind]
        parts.append(
            f'<g><title>{escape(unique_id)}</title><rect x="{left:.1f}" y="{top:.1f}" '
            f'width="{width:.1f}" height="{BOX_HEIGHT}" rx="4" fill="{fill}" stroke="{stroke}"/>'
            f'<text x="{left + 8:.1f}" y="{top + BOX_HEIGHT - 5:.1f}">'
            f"{escape(node.label)}</text></g>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def picture_from_manifest(manifest_path: Path) -> str:
    """The SVG for the manifest at `manifest_path` (written by `dbt parse`)."""
    if not manifest_path.is_file():
        raise KappaShopError(f"no manifest at {manifest_path}: run `dbt parse` first")
    return render_svg(lineage_from_manifest(json.loads(manifest_path.read_text())))


def write_picture(project_root: Path) -> Path:
    """Write docs/lineage.svg from target/manifest.json; return its path."""
    picture = project_root / PICTURE
    picture.parent.mkdir(parents=True, exist_ok=True)
    picture.write_text(picture_from_manifest(project_root / "target" / "manifest.json"))
    return picture


def check_picture(project_root: Path) -> Path:
    """Fail (KappaShopError) unless docs/lineage.svg is what the manifest gives."""
    picture = project_root / PICTURE
    expected = picture_from_manifest(project_root / "target" / "manifest.json")
    if not picture.is_file() or picture.read_text() != expected:
        raise KappaShopError(
            f"{PICTURE} is stale: it does not show the DAG of target/manifest.json. "
            "Regenerate it with `make lineage` and commit it."
        )
    return picture
