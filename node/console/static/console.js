// lamarck operator console: table sorting, row filters and search. No dependency, no network.
// Sorting reads each cell's data-sort (else its text); numbers sort as numbers.
"use strict";

function cellKey(row, index) {
  const cell = row.cells[index];
  if (!cell) return "";
  return cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
}

function compareKeys(a, b) {
  const x = Number(a), y = Number(b);
  if (a !== "" && b !== "" && !Number.isNaN(x) && !Number.isNaN(y)) return x - y;
  return a.localeCompare(b);
}

function sortBy(table, header) {
  const index = Array.prototype.indexOf.call(header.parentNode.children, header);
  const ascending = header.getAttribute("aria-sort") !== "ascending";
  for (const th of header.parentNode.children) th.removeAttribute("aria-sort");
  header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  rows.sort((r1, r2) => {
    const order = compareKeys(cellKey(r1, index), cellKey(r2, index));
    return ascending ? order : -order;
  });
  for (const row of rows) body.appendChild(row);
}

function applyFilters(tableId) {
  const table = document.getElementById(tableId);
  if (!table) return;
  const selects = document.querySelectorAll(`select[data-table="${tableId}"]`);
  const search = document.querySelector(`input[data-search="${tableId}"]`);
  const needle = search ? search.value.trim().toLowerCase() : "";
  for (const row of table.tBodies[0].rows) {
    let shown = true;
    for (const select of selects) {
      const have = row.dataset[select.dataset.filter] || "";
      // data-match="word": the cell holds a space-separated list (a peer's domains).
      const match = select.dataset.match === "word"
        ? have.split(" ").includes(select.value)
        : have === select.value;
      if (select.value && !match) shown = false;
    }
    if (needle && !row.textContent.toLowerCase().includes(needle)) shown = false;
    row.hidden = !shown;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const table of document.querySelectorAll("table.sortable")) {
    for (const th of table.tHead ? table.tHead.rows[0].cells : []) {
      th.addEventListener("click", () => sortBy(table, th));
      th.addEventListener("keydown", (e) => { if (e.key === "Enter") sortBy(table, th); });
    }
  }
  for (const control of document.querySelectorAll("[data-table], [data-search]")) {
    const tableId = control.dataset.table || control.dataset.search;
    control.addEventListener("input", () => applyFilters(tableId));
  }
});
