"""Unit tests of docs/_ext/tables.py (table cells named by their header), run by ``nox -s docs``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "docs" / "_ext"))

import tables

TABLE = """<table class="table">
<thead>
<tr class="row-odd"><th class="head"><p>Claim in the <em>notes</em></p></th>
<th class="head"><p>Verdict &amp; correction</p></th>
</tr>
</thead>
<tbody>
<tr class="row-even"><td><p>A</p></td>
<td><p>B</p></td>
</tr>
<tr class="row-odd"><td><p>C</p></td>
<td><p>D</p></td>
</tr>
</tbody>
</table>"""


def test_each_body_cell_gets_its_column_header() -> None:
    labelled = tables.label_table(TABLE)
    assert labelled.count('<td data-label="Claim in the notes">') == 2
    assert labelled.count('<td data-label="Verdict &amp; correction">') == 2
    assert '<th class="head">' in labelled  # the header row itself is unchanged
    assert tables.label_table(labelled) == labelled  # once only


def test_tables_without_a_header_or_with_merged_cells_are_left_alone() -> None:
    no_header = '<table class="autosummary"><tbody><tr><td>x</td><td>y</td></tr></tbody></table>'
    assert tables.label_table(no_header) == no_header
    merged = TABLE.replace("<td><p>A</p></td>", '<td colspan="2"><p>A</p></td>')
    assert tables.label_table(merged) == merged


def test_every_table_of_a_page_is_labelled() -> None:
    page = f"<p>before</p>{TABLE}<p>between</p>{TABLE}"
    assert tables.label_tables(page).count("data-label=") == 8


def test_a_table_whose_cells_label_themselves_is_left_alone() -> None:
    # the cheat sheet: each cell opens with its own p.cs-label, shown on a phone
    own = TABLE.replace("<td><p>A</p>", '<td class="cs-hook"><p class="cs-label">Claim</p><p>A</p>')
    assert tables.label_table(own) == own
