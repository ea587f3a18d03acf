// sewerplan map: loads the layers of the current view from the JSON API, draws them, and handles clicks (parcel
// popup, measuring line, trace; manhole sewershed), the selection, search, the attribute table, select by distance,
// printing, runs and plans. Every value shown comes from data users upload: it is set with textContent, never as
// HTML. Every ID goes to the server in a query parameter (encodeURIComponent), never in a URL path.
//
// Drawing: one canvas renderer draws every layer a user can click (streets, parcels, buildings, mains, manholes,
// plants), in a fixed order, so no second canvas can sit on top and swallow clicks. What the user asked to see (the
// measuring line, a trace, a sewershed, the selection, a searched area, a plan) is drawn in panes above it that
// never take a click; a plan's rings and manholes alone are on the canvas, drawn last, for their tooltips, and pass
// their clicks to what lies under them (clickUnder), as a main and the plant do.
(function () {
  "use strict";
  const cfgNode = document.getElementById("sewerplan-config");
  const cfg = cfgNode.dataset;
  const page = JSON.parse(cfg.page);
  const map = window.sewerplanMap;
  const control = window.sewerplanControl;
  const colours = page.colours;

  // -- plain words and numbers (dates come worded by the server, in the town's format) ------------------------
  const words = (code) => (code === null || code === undefined ? "" : page.words[code] || String(code).replaceAll("_", " "));
  const plural = (n, one, many) => (n === 0 ? `no ${many || one + "s"}` :
                                    `${Number(n).toLocaleString("en-US")} ${n === 1 ? one : many || one + "s"}`);
  const num = (v, unit) => {
    if (v === null || v === undefined || v === "" || Number.isNaN(Number(v))) return "";
    const x = Number(v);
    const text = Number.isInteger(x) ? x.toLocaleString("en-US")
                                     : x.toLocaleString("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });
    return unit ? `${text} ${unit}` : text;
  };

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }
  // Every read and link says which workspace this page shows (the upload's token, or "town"), as its posts do.
  const api = (path, params) => `${path}?${new URLSearchParams({ ...params, workspace: cfg.workspace }).toString()}`;
  // Every answer is read as JSON where it is JSON: a page in its place (a proxy's "502 Bad Gateway", a login page)
  // gives body null, so the caller says what failed instead of waiting forever on an unread promise.
  // A POST says which workspace this page shows (the upload's token, or "town"): the server refuses it (409) when
  // the session works on another one now, as after "Back to the town's store" in another tab.
  // Reads too: after "Back to the town's store" in another tab, this tab's map showed the town's parcels under its
  // banner "You are working on your upload"; refused now, and said once above the map (staleWorkspace).
  const fetchJSON = async (url, options) => {
    const sent = { credentials: "same-origin", ...options };
    sent.headers = { "X-Sewerplan-Workspace": cfg.workspace, ...sent.headers };
    const response = await fetch(url, sent);
    let body = null;
    try { body = await response.json(); } catch (err) { body = null; }
    if (response.status === 409 && body && body.error && body.error.title === "Workspace changed") {
      staleWorkspace(body.error.message);
    }
    return { ok: response.ok && body !== null, status: response.status, body };
  };
  // The page's one sentence that it shows a workspace the session no longer works on: reload to see the other.
  const staleWorkspace = (text) => {
    let note = document.getElementById("stale-workspace");
    if (!note) {
      note = document.createElement("p");
      note.id = "stale-workspace";
      note.className = "notice";
      note.setAttribute("role", "alert");
      document.body.prepend(note);
    }
    note.textContent = text;
  };
  // A popup from a run newer than the one this page was drawn from (run in another tab): its run line, colours and
  // the legend's counts are the old run's, so say it once above the map, as a changed workspace is said.
  const newerRun = (run) => {
    if (!run || !run.run_at || !page.runAt || run.run_at === page.runAt) return;
    staleWorkspace("A newer analysis of this data was run since this page was opened: its popups give the new run's "
      + "results, while the map's colours, run line and counts are the old run's. Reload the page to see the new run.");
  };
  const getJSON = (url, signal) => fetchJSON(url, { signal });
  const errorText = (r, fallback) => (r.body && r.body.error ? r.body.error.message
    : r.body === null ? `${fallback} The server answered ${r.status} without a message: try again, or ask whoever runs it.`
    : fallback);

  // -- panes and the one renderer -------------------------------------------------------------------------------
  map.createPane("sewerplan-data").style.zIndex = 410;
  for (const [name, z] of [["sewerplan-overlay", 615], ["sewerplan-selection", 625], ["sewerplan-evidence", 635]]) {
    const pane = map.createPane(name);
    pane.style.zIndex = z;
    pane.classList.add("sewerplan-passive");  // never takes a click: the parcels under it do
  }
  const renderer = L.canvas({ padding: 0.3, pane: "sewerplan-data", tolerance: 3 });
  map.options.renderer = renderer;  // any layer made without one uses this canvas too, never a second one
  const passive = (pane) => ({ pane, interactive: false, renderer: L.svg({ pane, padding: 0.3 }) });
  const overlayStyle = passive("sewerplan-overlay");
  const selectionStyle = passive("sewerplan-selection");
  const evidenceStyle = passive("sewerplan-evidence");

  const ORDER = ["streets", "subdivisions", "parcels", "buildings", "mains", "manholes", "plants"];
  const layers = {
    parcels: L.geoJSON(null, {
      renderer,
      style: (f) => ({
        color: "#555", weight: f.properties.count ? 0 : 0.6,
        fillColor: colours[f.properties.status] || "#999", fillOpacity: f.properties.count ? 0.45 : 0.6,
      }),
      // A click inside a lot is that lot's, however near its neighbour's edge (the renderer's few pixels of
      // tolerance are for the thin mains, and would hand a click near a shared edge to the lot drawn later).
      onEachFeature: (f, layer) => { layer._clickTolerance = () => 0; },
    }),
    mains: L.geoJSON(null, {
      renderer,
      style: (f) => ({ color: f.properties.sewer_type === "storm" ? "#74a9cf" : "#3a3a3a",
                       weight: Math.max(1.5, Math.min(7, (f.properties.diameter_in || 8) / 3)),
                       dashArray: f.properties.status === "abandoned" ? "4 4" : null }),
      onEachFeature: (f, layer) => layer.bindTooltip(() => el("span",
        `Main ${f.properties.main_id}${f.properties.diameter_in ? " · " + num(f.properties.diameter_in, "in") : ""}`)),
    }),
    manholes: L.geoJSON(null, {
      pointToLayer: (f, latlng) => L.circleMarker(latlng, { renderer, radius: 4, color: "#222", weight: 1,
                                                             fillColor: "#fff", fillOpacity: 1 }),
    }),
    streets: L.geoJSON(null, {
      renderer,
      style: { color: "#ffffff", weight: 9, opacity: 0.9 },
      onEachFeature: (f, layer) => layer.bindTooltip(() => el("span", f.properties.street_name || "street")),
    }),
    buildings: L.geoJSON(null, {
      renderer,
      style: (f) => {
        const p = f.properties;
        const more = (p.required_laterals || 1) > 1;
        const finding = p.lateral_below_standard || p.manhole_connection_case;
        return { color: p.rear_building ? "#7b3294" : more ? "#e66101" : finding ? "#b2182b" : "#444",
                 weight: p.rear_building || more || finding ? 2.5 : 1, dashArray: more ? "4 3" : null,
                 fillColor: "#fafafa", fillOpacity: 0.8 };
      },
      onEachFeature: (f, layer) => layer.bindTooltip(() => el("span", f.properties.reason ||
        `Building ${f.properties.building_id}${f.properties.units ? " · " + plural(f.properties.units, "living unit") : ""}`)),
    }),
    plants: L.geoJSON(null, {
      pointToLayer: (f, latlng) => L.circleMarker(latlng, { renderer, radius: 9, color: "#000", fillColor: "#756bb1",
                                                             fillOpacity: 1 }),
      onEachFeature: (f, layer) => layer.bindTooltip(() => el("span", f.properties.name || f.properties.outfall_name || "treatment plant")),
    }),
    subdivisions: L.geoJSON(null, {
      ...overlayStyle,
      style: (f) => ({ color: f.properties.sewer_duty === "must_build_sewers" ? "#c51b7d" : "#4d9221", weight: 3,
                       dashArray: "8 5", fill: false }),
      onEachFeature: (f, layer) => layer.bindTooltip(el("span", `${f.properties.subdivision_name || f.properties.subdivision_id}: ` +
        `${words(f.properties.sewer_duty)}${f.properties.cited ? " " + f.properties.cited : ""}`),
        { permanent: true, direction: "center", className: "subdivision-label" }),
    }),
  };
  const selectionLayer = L.layerGroup().addTo(map);
  const focusLayer = L.layerGroup().addTo(map);
  const evidence = L.layerGroup().addTo(map);
  const withinLayer = L.layerGroup().addTo(map);
  const planLayer = L.layerGroup().addTo(map);
  const planMarks = L.featureGroup().addTo(planLayer);  // a plan's rings and manholes, on the canvas for their tooltips
  // Only the layers the store has, with features (the server's page.layers): a store of parcels and mains alone
  // had "Streets", "Buildings" and "Treatment plant" offered, switching nothing on or off.
  const present = new Set(page.layers || []);
  const OVERLAYS = [["streets", "Streets"], ["subdivisions", "Subdivisions"], ["parcels", "Parcels by status"],
                    ["buildings", "Buildings"], ["mains", "Sewer mains"], ["manholes", "Manholes"],
                    ["plants", "Treatment plant"]];
  OVERLAYS.forEach(([name, label]) => { if (present.has(name)) control.addOverlay(layers[name], label); });
  if (present.has("mains")) control.addOverlay(evidence, "Measuring lines and traces");  // both follow the mains
  control.addOverlay(selectionLayer, "Selection");
  ORDER.forEach((name) => { if (present.has(name)) layers[name].addTo(map); });

  // The layer panel folds away on a small screen (a tap on its button opens it, a tap on the map closes it).
  const small = window.matchMedia("(max-width: 700px), (max-height: 500px)");  // as sewerplan.css
  const fold = () => { if (small.matches) control.collapse(); else control.expand(); };
  fold();
  small.addEventListener("change", fold);
  map.on("click", () => { if (small.matches) control.collapse(); });
  // Unfolded on a phone the panel covers most of the map, and the tap on the map that put it away also opened the
  // popup of the parcel under the finger: that tap folds the panel and opens nothing.
  const unfolded = () => small.matches && control.getContainer().classList.contains("leaflet-control-layers-expanded");

  // The sidebar on a small screen folds away behind a button (#sidebar-toggle); what needs a part of it opens it.
  const toggle = document.getElementById("sidebar-toggle");
  function showSidebar(open) {
    if (!small.matches || document.body.classList.contains("sidebar-open") === open) return;
    document.body.classList.toggle("sidebar-open", open);
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    setTimeout(() => map.invalidateSize(), 50);
  }

  // The map's box takes the focus (arrow keys move it, + and - zoom): a screen reader names it.
  map.getContainer().setAttribute("aria-label", "Map: arrow keys move it, plus and minus zoom; the table below lists " +
    "the parcels in view, Enter on a row opens one");
  map.getContainer().setAttribute("role", "region");

  function reorder() {  // the canvas draws in the order layers were added: put them back in the map's order
    ORDER.forEach((name) => { if (name !== "subdivisions" && map.hasLayer(layers[name])) layers[name].bringToFront(); });
    if (map.hasLayer(planMarks)) planMarks.bringToFront();  // a plan's rings and manholes above all, not under a fill
  }

  // -- what the user is doing: nothing, or drawing for a plan or for select by distance ---------------------------
  let mode = null;  // null | "plan" | "within"

  // -- loading the view --------------------------------------------------------------------------------------------
  let pending = null;
  let viewTotal = 0;
  let viewParcels = [];  // the parcels of the current view (their map properties), for the table and the legend
  let aggregated = false;
  function bboxParam() {
    // Zoomed out past the whole world the view wraps beyond +-180: ask for the world, not an impossible box.
    const b = map.getBounds();
    const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));
    return [clamp(b.getWest(), -180, 180), clamp(b.getSouth(), -90, 90), clamp(b.getEast(), -180, 180),
      clamp(b.getNorth(), -90, 90)].map((v) => v.toFixed(6)).join(",");
  }

  async function refresh() {
    if (pending) pending.abort();
    pending = new AbortController();
    const signal = pending.signal;
    const zoom = map.getZoom();
    const query = `bbox=${bboxParam()}&zoom=${zoom}`;
    const wanted = { streets: zoom >= 14, parcels: true, buildings: zoom >= 17, mains: zoom >= 13,
                     manholes: zoom >= 16, plants: true, subdivisions: true };
    Object.keys(wanted).forEach((name) => { if (!present.has(name)) delete wanted[name]; });  // none to ask for
    document.body.dataset.loading = "1";
    try {
      await Promise.all(Object.entries(wanted).map(async ([name, want]) => {
        if (!want) { layers[name].clearLayers(); return; }
        const r = await getJSON(`/api/layers/${name}?${query}`, signal);
        if (!r.ok || !r.body || signal.aborted) return;  // refused, or cut short by a newer view
        layers[name].clearLayers();
        layers[name].addData(r.body);
        if (name === "parcels") {
          aggregated = Boolean(r.body.aggregated);
          document.body.dataset.aggregated = aggregated ? "1" : "0";
          viewParcels = aggregated ? [] : r.body.features.map((f) => f.properties);
          viewTotal = aggregated ? r.body.total : viewParcels.length;
        }
      }));
      reorder();
      updateLegend();
      if (table.mode === "view" && !table.hold) renderTable();
      else markSelectedRows();
      table.hold = false;
      document.body.dataset.loaded = String(Date.now());
    } catch (err) {
      if (err.name !== "AbortError") console.error(err);
    } finally {
      if (pending && pending.signal === signal) document.body.dataset.loading = "0";
    }
  }
  map.on("moveend", refresh);
  map.on("overlayadd", reorder);  // a layer switched back on is drawn in its place, not over the plan's marks

  // -- the legend: each status with its count in the town and in view ---------------------------------------------
  function updateLegend() {
    const inView = {};
    viewParcels.forEach((p) => { inView[p.status] = (inView[p.status] || 0) + 1; });
    document.querySelectorAll("#legend [data-status]").forEach((row) => {
      const s = row.dataset.status;
      const town = page.counts[s] || 0;
      const target = row.querySelector(".count");
      target.textContent = aggregated
        ? (page.hasResults ? `${town.toLocaleString("en-US")} in all` : "")
        : `${(inView[s] || 0).toLocaleString("en-US")} in view` + (page.hasResults ? ` · ${town.toLocaleString("en-US")} in all` : "");
    });
  }

  // -- the selection: what was clicked, found or selected by distance stays lit -----------------------------------
  const selection = { ids: [], rows: [], source: null, within: null, measuredFrom: null };
  function drawSelection(geojson) {
    selectionLayer.clearLayers();
    if (!geojson) return;
    L.geoJSON(geojson, { ...selectionStyle, style: { color: "#0b2545", weight: 7, opacity: 0.7, fill: false } })
      .addTo(selectionLayer);
    L.geoJSON(geojson, { ...selectionStyle, style: { color: "#00e5ff", weight: 3.5, opacity: 1, fillColor: "#00e5ff",
                                                     fillOpacity: 0.12 } }).addTo(selectionLayer);
  }
  function selectOne(feature) {
    focusLayer.clearLayers();
    const id = String(feature.properties.parcel_id);
    if (selection.source === "within" && selection.ids.includes(id)) {  // a parcel of the list: the list stays
      L.geoJSON(feature, { ...selectionStyle, style: { color: "#ffe600", weight: 5, fill: false } }).addTo(focusLayer);
      document.body.dataset.focused = id;
      markSelectedRows();
      return;
    }
    selection.ids = [String(feature.properties.parcel_id)];
    selection.rows = [feature.properties];
    selection.source = "parcel";
    selection.within = null;
    withinLayer.clearLayers();
    drawSelection(feature);
    document.body.dataset.focused = id;
    within.parcel = id;
    document.body.dataset.selected = selection.ids.join("\n");
    table.setSelectedCount();
    if (table.mode === "selected") renderTable();
    else markSelectedRows();
  }

  // -- the parcel popup ---------------------------------------------------------------------------------------------
  function row(dl, label, value) {
    if (value === null || value === undefined || value === "") return;
    dl.append(el("dt", label), el("dd", value));
  }
  const CODED_ROWS = new Set(["Grease interceptor", "Industrial user", "Subdivision", "Measured from"]);

  let openPopup = null;  // the popup popupAt opened last
  function popupAt(latlng, content) {
    // Leaflet adds about 45 px of frame to maxWidth, and auto-panning keeps 20 px clear on each side (60 px at the
    // top, below the layer control): on a phone the popup is narrowed and shortened to fit the map, never wider
    // than the screen, its close button in view.
    const size = map.getSize();
    const popup = L.popup({
      maxWidth: Math.max(160, Math.min(360, size.x - 90)),
      maxHeight: Math.max(100, Math.min(420, size.y - 140)),  // a phone on its side: a map 242 px high
      autoPanPadding: [20, 20],
      autoPanPaddingTopLeft: [20, 60],
    });
    // Auto-panning brings the popup into the map's box; the window is scrolled to it once the pan has ended.
    let panning = false;
    const panned = () => { panning = true; map.once("moveend", () => intoWindow(popup)); };
    map.once("autopanstart", panned);
    popup.setLatLng(latlng).setContent(content).openOn(map);
    map.off("autopanstart", panned);
    if (!panning) intoWindow(popup);
    openPopup = popup;
    return popup;
  }

  // On a phone the map sits below the sidebar, whose search hits are above the window's fold: Leaflet's autoPan keeps
  // a popup inside the map's box, not inside the window, and a hit's popup opened out of sight below the hits (at
  // 390 x 844, 640 px down a window 700 px high). The page scrolls to show it, the window alone: scrollIntoView
  // would scroll the map's own box too. Nothing moves where the popup is in view (the map fills a desktop's window).
  function intoWindow(popup) {
    const node = popup.getElement();
    if (!node || !map.hasLayer(popup)) return;
    const r = node.getBoundingClientRect(), room = window.innerHeight, margin = 10;
    if (r.bottom > room - margin) window.scrollBy(0, Math.min(r.bottom - room + margin, r.top - margin));
    else if (r.top < margin) window.scrollBy(0, r.top - margin);
  }

  // Escape closes the open popup, however it was opened. Leaflet's own Escape works only while the map's box has the
  // focus: after a click on the popup's "Trace to the plant" the button has it, and Escape did nothing (a popup
  // opened from a hit or a row with Enter closes by its own handler, which gives the focus back to the hit or row).
  // In a search box Escape keeps its own meaning, clearing the box. The focus, if it was in the popup, goes to the
  // map, not to the page's top. With no popup open, Escape puts away what covers the map, one thing a press: the
  // layer panel unfolded on a narrow screen, the first-visit hint (a keyboard user reached its "Got it" after 50
  // Tabs), then the sidebar opened on a narrow screen (the focus back on the button that opened it).
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape" || e.defaultPrevented) return;
    const at = document.activeElement;
    if (!openPopup || !map.hasLayer(openPopup)) {
      if (!(at && at.matches("input[type=search]"))) closeTopPanel();
      return;
    }
    const inPopup = Boolean(at && openPopup.getElement() && openPopup.getElement().contains(at));
    if (!inPopup && at && at.matches("input[type=search]")) return;
    map.closePopup(openPopup);
    if (inPopup) map.getContainer().focus({ preventScroll: true });
  });
  function closeTopPanel() {
    const panel = control.getContainer();
    if (small.matches && panel.classList.contains("leaflet-control-layers-expanded")) {
      control.collapse();
      if (panel.contains(document.activeElement)) panel.querySelector(".leaflet-control-layers-toggle").focus();
    } else if (hint && !hint.hidden) {
      const inHint = hint.contains(document.activeElement);
      hideHint();
      if (inHint) map.getContainer().focus({ preventScroll: true });
    } else if (small.matches && document.body.classList.contains("sidebar-open")) {
      showSidebar(false);
      toggle.focus();
    }
  }

  // Only the latest thing asked for opens: clicks in quick succession (or a click while a search hit loads) each
  // send a request, and an answer that came back late (a larger parcel, a slower sewershed) opened its popup and
  // selection over the one clicked last. Each asking takes a number; an answer for an earlier one is dropped.
  let askings = 0;
  const ask = () => ++askings;
  const superseded = (ticket) => ticket !== askings;

  async function showParcel(parcelId, latlng, building, fit, ticket = ask()) {
    const r = await getJSON(api("/api/parcel", { id: parcelId }));
    if (superseded(ticket)) return null;
    if (!r.ok) {
      popupAt(latlng || map.getCenter(), el("p", errorText(r, `No parcel ${parcelId}.`), "popup error"));
      return null;
    }
    const data = r.body;
    const p = data.parcel.properties;
    newerRun(data.run);
    hideHint();
    selectOne(data.parcel);
    const bounds = L.geoJSON(data.parcel).getBounds();
    if (fit) map.fitBounds(bounds, { maxZoom: 19, animate: false });
    const box = el("div", null, "popup parcel-popup");
    box.dataset.parcelId = p.parcel_id;
    box.append(el("h4", p.parcel_id));
    const dl = el("dl");
    row(dl, "Site address", p.site_address);
    row(dl, "Owner", p.owner_name);
    row(dl, "Status", words(p.status));
    // The register's word where the run does not show it (marked connected or exempt since): the server's sentence.
    if (data.register_note) row(dl, "Register", data.register_note);
    // Worded by the server as the reason words it ("0.0 ft", "99.96 ft" within 100 ft), not "0 ft" or "100.0 ft".
    row(dl, "Distance", data.distance_text ? `${data.distance_text} to main ${p.main_id}` : null);
    row(dl, "Rule", words(p.rule));
    row(dl, "Section", p.section);
    // The register's notice is what the owner was sent: its deadline, not the one an analysis run's notice date
    // gives, is the parcel's deadline once a notice is issued.
    // A connection recorded without a notice (type record) stands whatever notices came before it.
    const live = (data.notices || []).filter((n) => n.status !== "cancelled");
    const notice = live.filter((n) => n.notice_type === "record").pop() || live.pop();
    // A notice given on a run that measured otherwise than this one (a what-if run under Poughkeepsie after Fort
    // Plain's notices, or under Fort Plain at 250 ft after notices given at 100 ft): the reason is this run's, and a
    // row says what differs (the server's sentence, notice.other_run); the notice names the law it was given under.
    const run = data.run || {};
    const otherLaw = Boolean(notice && notice.profile && run.profile && notice.profile !== run.profile);
    const underLaw = otherLaw ? ` under profile ${notice.profile}` + (notice.section ? ` (${notice.section})` : "") : "";
    const otherRun = notice && notice.other_run;
    // The server words the reason as the popup shows it (data.reason): without the run's closing "Deadline …"
    // sentence, since the Deadline row below gives the deadline that holds.
    row(dl, otherRun ? `Reason (this run${otherLaw ? `, profile ${run.profile}` : ""}, not the notice on record)` : "Reason",
      data.reason);
    if (otherRun) row(dl, "This run and the notice", otherRun);
    if (notice && notice.notice_type === "record") {  // no notice was given: no letter, no deadline
      row(dl, "Notice", `none given; ${words(notice.status)} on ${notice.issued_date_text}, recorded without a notice ` +
                        `(${notice.notice_id})`);
      row(dl, "Deadline", "none: no notice was given");
    } else if (notice && notice.status === "prepared") {  // recorded, its letter not yet written: not issued, no deadline
      row(dl, "Notice", `${notice.notice_id}, ${notice.notice_type} notice${underLaw}, being prepared: not mailed yet`);
      row(dl, "Deadline", "none yet");
    } else if (notice) {
      const open = notice.status === "open" || notice.status === "extended";
      const connectedOn = notice.status === "connected" && notice.connected_on_text ? ` on ${notice.connected_on_text}` : "";
      row(dl, "Notice", `${notice.notice_id}, ${notice.notice_type} notice, ${words(notice.status)}${connectedOn}` +
                        `, issued ${notice.issued_date_text}${underLaw}`);
      row(dl, "Deadline", !notice.deadline ? "none yet" : `${notice.deadline_text} ` +
        (notice.status === "extended" ? "(extended)" : open ? "(in the notice)" : "(in the notice; it no longer runs)"));
    } else {
      if (data.notices === null) row(dl, "Notice", "the notice register could not be read");
      row(dl, "Deadline", p.deadline ? `${p.deadline_text} (if noticed on this run's notice date)` : null);
    }
    row(dl, "Control manhole", p.control_manhole);
    (data.rows || []).forEach(([label, value]) => row(dl, label, CODED_ROWS.has(label) ? words(value) : value));
    box.append(dl);
    if (building) box.append(buildingPart(building));
    const actions = el("p", null, "popup-actions");
    const trace = el("button", "Trace to the plant", "trace-button");
    trace.type = "button";
    const result = el("p", null, "trace-result");
    result.setAttribute("aria-live", "polite");
    trace.addEventListener("click", () => traceParcel(parcelId, result, bounds));
    const near = el("button", "Parcels near this one", "near-button");
    near.type = "button";
    near.addEventListener("click", () => {
      within.from.value = "parcel";
      showSidebar(true);  // on a phone the panel is in the folded sidebar: the button did nothing there
      within.panel.scrollIntoView({ block: "nearest" });
      within.distance.focus({ preventScroll: true });
    });
    actions.append(trace, " ", near);
    box.append(actions, result);
    evidence.clearLayers();
    if (data.measuring_line) {
      L.geoJSON(data.measuring_line, { ...evidenceStyle, style: { color: "#fff", weight: 8, opacity: 0.9 } }).addTo(evidence);
      L.geoJSON(data.measuring_line, { ...evidenceStyle, style: { color: "#e41a1c", weight: 4, dashArray: "8 5" } })
        .addTo(evidence);
    }
    popupAt(latlng || bounds.getCenter(), box);
    return data;
  }

  function buildingPart(b) {
    const part = el("div", null, "building-part");
    part.append(el("h5", `Building ${b.building_id}`));
    const dl = el("dl");
    if (b.units !== null && b.units !== undefined) row(dl, "Living units", plural(Number(b.units), "living unit"));
    if (b.rear_building) row(dl, "Rear building", words(b.shared_lateral) || "yes");
    if (b.required_laterals > 1) {
      row(dl, "Building sewers", `${plural(b.required_laterals, "building sewer")} needed` +
          (b.existing_laterals !== null && b.existing_laterals !== undefined ? `, ${b.existing_laterals} there` : ""));
    }
    if (b.lateral_diameter_in !== null && b.lateral_diameter_in !== undefined) {
      row(dl, "Its building sewer", `${num(b.lateral_diameter_in, "in")} across` +
          (b.lateral_slope_in_per_ft !== null && b.lateral_slope_in_per_ft !== undefined
            ? `, falling ${Number(b.lateral_slope_in_per_ft).toFixed(3)} in per ft` : "") +
          (b.lateral_below_standard ? ": below the standard" : ": meets the standard"));
    }
    if (b.manhole_connection_case) {
      row(dl, "Manhole connection", "a case for the administrative body to determine, not a requirement");
    }
    row(dl, "Findings", b.reason);
    row(dl, "Section", b.section);
    part.append(dl);
    return part;
  }

  async function showBuilding(buildingId, parcelId, latlng) {
    const ticket = ask();
    const r = await getJSON(api("/api/building", { id: buildingId }));
    if (superseded(ticket)) return null;
    const building = r.ok ? r.body.building.properties : null;
    if (parcelId) return showParcel(parcelId, latlng, building, false, ticket);
    if (building) {
      const box = el("div", null, "popup building-popup");
      box.append(buildingPart(building));
      popupAt(latlng, box);
    }
    return null;
  }

  const openParcel = (layer, latlng) => {
    const p = layer.feature.properties;
    if (p.parcel_id !== undefined) showParcel(p.parcel_id, latlng);  // a count of parcels zoomed out opens nothing
  };
  const openBuilding = (layer, latlng) => {
    const p = layer.feature.properties;
    showBuilding(p.building_id, p.parcel_id, latlng);
  };
  const openManhole = (layer, latlng) => showSewershed(layer.feature.properties.manhole_id, latlng);
  layers.parcels.on("click", (e) => { if (!mode && !unfolded()) openParcel(e.layer, e.latlng); });
  layers.buildings.on("click", (e) => { if (!mode && !unfolded()) openBuilding(e.layer, e.latlng); });
  layers.manholes.on("click", (e) => { if (!mode && !unfolded()) openManhole(e.layer, e.latlng); });

  // A mark that only names itself (a main, the plant, a plan's rings and manholes) opens nothing of its own: a click
  // on it is the manhole's, building's or parcel's drawn under it, as if the mark were not there, and its tooltip
  // (on hover, or on a tap) still names it. A main through a back yard, or a plan's ring where its main crosses one,
  // took the click and the parcel under it opened no popup. Found as the canvas finds what a click is on.
  const UNDER = [["manholes", openManhole], ["buildings", openBuilding], ["parcels", openParcel]];
  function clickUnder(e) {
    if (mode || unfolded()) return;  // drawing: a vertex (the map's click); the layer panel unfolded: the tap folds it
    const point = map.latLngToLayerPoint(e.latlng);
    for (const [name, open] of UNDER) {
      if (!map.hasLayer(layers[name])) continue;
      let hit = null;  // the last drawn is the one on top
      layers[name].eachLayer((layer) => { if (layer._containsPoint(point)) hit = layer; });
      if (hit) { open(hit, e.latlng); return; }
    }
  }
  layers.mains.on("click", clickUnder);
  layers.plants.on("click", clickUnder);

  async function traceParcel(parcelId, target, parcelBounds) {
    target.textContent = "Tracing…";
    const before = target.nextElementSibling;  // a trace run again: the last run's splits go with its sentence
    if (before && before.matches(".trace-splits")) before.remove();
    reveal(target);
    const ticket = askings;  // another parcel or manhole opened meanwhile: its evidence is not to get this trace
    const r = await getJSON(api("/api/trace", { parcel: parcelId }));
    if (superseded(ticket)) return;
    if (!r.ok) { target.textContent = errorText(r, "No trace."); reveal(target); return; }
    const data = r.body;
    L.geoJSON(data.geojson, { ...evidenceStyle, style: { color: "#fff", weight: 12, opacity: 0.9 } }).addTo(evidence);
    L.geoJSON(data.geojson, { ...evidenceStyle, style: { color: "#00a651", weight: 7, opacity: 1 } }).addTo(evidence);
    L.geoJSON(data.control_manhole_geojson, {
      ...evidenceStyle,
      pointToLayer: (f, ll) => L.circleMarker(ll, { ...evidenceStyle, radius: 10, color: "#00a651", weight: 4, fillOpacity: 0 }),
    }).addTo(evidence);
    target.textContent = data.problem
      ? data.problem
      : `Control manhole ${data.control_manhole}; ${num(Math.round(data.length_ft), "ft")} through ` +
        `${plural(data.mains.length, "main")} to ${data.outfall}` +
        (data.plant ? `, the inlet of the treatment plant ${data.plant}.` : ".");
    target.dataset.controlManhole = data.control_manhole || "";
    // Each place the flow divides on the way, as the command line says it: one line (the node, the main followed),
    // the server's whole sentence (why, and every other way out) behind "why". None: nothing more is shown.
    if ((data.splits || []).length) {
      const list = el("ul", null, "trace-splits");
      for (const split of data.splits) {
        const item = el("li", split.line || split.reason);
        item.dataset.node = split.node;
        if (split.line && split.line !== split.reason) {
          const why = el("details");
          why.append(el("summary", "why"), el("span", split.reason));
          why.addEventListener("toggle", () => { if (why.open) reveal(why); });
          item.append(" ", why);
        }
        list.append(item);
      }
      target.after(list);
    }
    fitTrace(L.geoJSON(data.geojson).getBounds(), parcelBounds, target);
    if (target.nextElementSibling && target.nextElementSibling.matches(".trace-splits")) reveal(target.nextElementSibling);
    reveal(target);
  }

  // A long trace (to a plant across town) was drawn mostly off screen and the map stayed on the parcel. A trace not
  // wholly in view is brought into it with the popup's parcel, inside the margins auto-panning keeps (60 px at the
  // top, under the layer control, 20 px elsewhere), and the popup with them where it fits: the map pans, or zooms out
  // a step at a time, never further than the zoom that shows the trace and its parcel alone (the popup may cover
  // part of the trace). It had zoomed out until the popup, 384 px high in a map 496 px high, fitted above a parcel
  // whose trace ran south to the plant: zoom 11, the village a speck, for a trace of a mile. Where the popup does
  // not fit above its parcel there, it is shortened (it scrolls, as on a phone) rather than the map zoomed out; only
  // a popup too wide to stand beside the trace's far end costs one step more. The close button and the trace's ends
  // stay in view.
  function fitTrace(traced, parcelBounds, target) {
    if (!traced.isValid() || map.getBounds().contains(traced)) return;
    const all = L.latLngBounds(traced.getSouthWest(), traced.getNorthEast()).extend(parcelBounds);
    const size = map.getSize(), top = 60, edge = 20;
    const popup = openPopup && map.hasLayer(openPopup) && openPopup.getElement().contains(target) ? openPopup : null;
    const anchor = popup ? popup.getLatLng() : parcelBounds.getCenter();
    // the popup's box around its anchor, in screen pixels (the same at every zoom), and how far it may be shortened
    const node = popup ? popup.getElement() : null;
    const content = node ? node.querySelector(".leaflet-popup-content") : null;
    const at = map.latLngToContainerPoint(anchor), frame = map.getContainer().getBoundingClientRect();
    const r = node ? node.getBoundingClientRect() : null;
    const around = r ? L.bounds(L.point(r.left - frame.left - at.x, r.top - frame.top - at.y),
                                L.point(r.right - frame.left - at.x, r.bottom - frame.top - at.y))
                     : L.bounds(L.point(0, 0), L.point(0, 0));
    const shortenBy = content ? Math.max(0, content.offsetHeight - 100) : 0;  // popupAt's shortest popup: 100 px
    // the zoom that shows the trace and its parcel alone inside the margins: the floor (one step below it at most)
    const alone = Math.min(map.getZoom(), map.getBoundsZoom(all, false, L.point(2 * edge, top + edge)));
    const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));
    // Where the view's top-left corner goes at zoom z (in Leaflet's pixels at z) so that the trace and parcel are
    // inside the margins and the popup is too, or null; with `short`, the pixels the popup must lose to fit.
    const place = (z) => {
      const a = map.project(anchor, z);
      const t = L.bounds(map.project(all.getNorthWest(), z), map.project(all.getSouthEast(), z));
      const lo = L.point(t.max.x - (size.x - edge), t.max.y - (size.y - edge)), hi = L.point(t.min.x - edge, t.min.y - top);
      if (lo.x > hi.x || lo.y > hi.y) return null;  // the trace alone is too large at z
      const p = L.bounds(a.add(around.min), a.add(around.max));
      const px = [p.max.x - (size.x - edge), p.min.x - edge];
      if (px[0] > hi.x || px[1] < lo.x) return null;  // the popup cannot stand beside the trace's far end
      const centred = t.getCenter().subtract(size.divideBy(2));
      const x = clamp(clamp(centred.x, px[0], px[1]), lo.x, hi.x);
      const y = clamp(Math.min(centred.y, p.min.y - top), lo.y, hi.y);  // the popup's top below the top margin
      return { z, corner: L.point(x, y), short: Math.max(0, y - (p.min.y - top)) };
    };
    let best = null;
    for (let z = map.getZoom(); z >= Math.max(map.getMinZoom(), alone - 1) && !best; z -= 1) {
      const p = place(z);
      if (p && (p.short === 0 || (z <= alone && p.short <= shortenBy))) best = p;
    }
    if (!best) {  // the trace and its parcel alone; the popup as it falls
      map.fitBounds(all, { paddingTopLeft: [edge, top], paddingBottomRight: [edge, edge], animate: false });
      return;
    }
    map.setView(map.unproject(best.corner.add(size.divideBy(2)), best.z), best.z, { animate: false });
    if (best.short > 0) {  // as Leaflet shortens a popup taller than its maxHeight: the rows scroll in their box
      const height = Math.floor(content.offsetHeight - best.short);
      popup.options.maxHeight = height;
      content.style.height = `${height}px`;
      content.classList.add("leaflet-popup-scrolled");
    }
  }

  // The popup scrolls inside its own box when its rows are many (a phone, a long reason): the trace's sentence is
  // written under its buttons, below that box's bottom edge, and the user pressing "Trace to the plant" saw nothing
  // happen. The box is scrolled to show it (the box alone: scrollIntoView would scroll the map's container too).
  function reveal(node) {
    const box = node.closest(".leaflet-popup-content");
    if (!box) return;
    const r = node.getBoundingClientRect(), b = box.getBoundingClientRect();
    if (r.bottom > b.bottom) box.scrollTop += Math.min(r.bottom - b.bottom, r.top - b.top);
    else if (r.top < b.top) box.scrollTop -= b.top - r.top;
  }

  async function showSewershed(manholeId, latlng) {
    const ticket = ask();
    const r = await getJSON(api("/api/sewershed", { manhole: manholeId }));
    if (superseded(ticket)) return;
    const box = el("div", null, "popup sewershed-popup");
    box.append(el("h4", `Manhole ${manholeId}`));
    if (!r.ok) {
      box.append(el("p", errorText(r, "Not in the network.")));
    } else {
      const data = r.body;
      evidence.clearLayers();
      L.geoJSON(data.geojson, { ...evidenceStyle, style: { color: "#fff", weight: 11, opacity: 0.9 } }).addTo(evidence);
      L.geoJSON(data.geojson, { ...evidenceStyle, style: { color: "#ff7f00", weight: 6, opacity: 1 } }).addTo(evidence);
      const units = Number(data.units) || 0;
      const given = Number(data.flow_given) || 0, unknown = Number(data.flow_unknown) || 0;
      const n = data.parcels.length;
      // Each parcel's flow is its flow_gpd where given (metered), else its living units x gpd per unit (the command
      // line's reading). flow_gpd is null where a parcel's flow is unknown: the flows known give a lower bound.
      const gpd = (v) => Math.round(v).toLocaleString("en-US");
      const flow = n > unknown
        ? (data.flow_gpd === null || data.flow_gpd === undefined
          ? `flow not known: at least ${gpd(data.flow_at_least_gpd)} gallons per day from the flows known, and more ` +
            `from the ${plural(unknown, "parcel")} whose flow is unknown`
          : `about ${gpd(data.flow_gpd)} gallons per day`)
        : "no flow given and no living units recorded, so no flow estimate";
      const served = n
        ? `${plural(n, "parcel")} with ` + (units || !given ? plural(units, "living unit") : "") +
          (units && given ? " and " : "") + (given ? plural(given, "metered flow") : "")
        : "no parcels";
      // the manholes upstream of it, not it: "Drains no mains and 1 manhole" was the manhole itself (a tester)
      const others = data.manholes.filter((m) => m !== data.manhole).length;
      box.append(el("p", `Drains ${plural(data.mains.length, "main")} and ${plural(others, "other manhole")}; ` +
        served + `; ${flow}.`));
      // The overflows into it whose upstream is counted where its traces go, in the command line's sentence.
      for (const other of data.not_counted || []) {
        const said = el("p", other.reason, "not-counted");
        said.dataset.main = other.main;
        box.append(said);
      }
    }
    popupAt(latlng, box);
  }

  // -- the first-visit hint -------------------------------------------------------------------------------------
  const hint = document.getElementById("map-hint");
  function hideHint() {
    if (!hint || hint.hidden) return;
    hint.hidden = true;
    try { localStorage.setItem("sewerplan.hint", "seen"); } catch (err) { /* private browsing */ }
  }
  if (hint) {
    let seen = null;
    try { seen = localStorage.getItem("sewerplan.hint"); } catch (err) { seen = null; }
    hint.hidden = Boolean(seen) || !page.parcels;
    hint.querySelector("button").addEventListener("click", hideHint);
  }

  // -- search ---------------------------------------------------------------------------------------------------
  const searchForm = document.getElementById("search-form");
  const searchInput = document.getElementById("search");
  const searchList = document.getElementById("search-results");
  const searchCount = document.getElementById("search-count");

  const goToParcel = (parcelId) => showParcel(parcelId, null, null, true);
  // A row of the table: the map pans to the parcel (zooming in only from far out) and the table keeps its rows.
  async function followRow(parcelId) {
    const ticket = ask();
    const r = await getJSON(api("/api/parcel", { id: parcelId }));
    if (!r.ok || superseded(ticket)) return;
    const bounds = L.geoJSON(r.body.parcel).getBounds();
    table.hold = true;
    if (map.getZoom() >= 16 && map.getBounds().pad(1).intersects(bounds)) map.panTo(bounds.getCenter(), { animate: false });
    else map.fitBounds(bounds, { maxZoom: 18, animate: false });
    return showParcel(parcelId, bounds.getCenter(), null, false, ticket);
  }

  // A hit or a row picked (with Enter, as a keyboard user does) opens the popup at the far end of the page's tab
  // order, after the sidebar, the map's controls and every layer's checkbox: "Trace to the plant" was 33 Tabs
  // away. The popup's heading takes the focus, so the next Tab is its first button, and Escape closes it and
  // gives the focus back to the hit or row it came from.
  async function intoPopup(opening, from) {
    const data = await opening;
    if (!data) return;
    // The last: the popup it replaced is still in the page while it fades out (removed 200 ms later, and with it
    // a focus given to it).
    const box = [...document.querySelectorAll(".leaflet-popup .parcel-popup")].pop();
    if (!box) return;
    const heading = box.querySelector("h4");
    heading.tabIndex = -1;
    heading.focus({ preventScroll: true });
    box.addEventListener("keydown", (e) => {
      if (e.key !== "Escape") return;
      e.preventDefault();  // this Escape closed the popup: the page's handler puts nothing else away with it
      map.closePopup();
      // A row may have been drawn anew meanwhile (the view moved to the parcel): its row of the same parcel.
      const rows = [...document.querySelectorAll("#attribute-table tbody tr")];
      const back = from.isConnected ? from : rows.find((tr) => tr.dataset.parcelId === from.dataset.parcelId);
      if (back) back.focus({ preventScroll: true });
    });
  }

  // Two searches typed in quick succession: the first's answer, come back last, listed its hits and opened its first
  // hit over the second's. Each search numbers itself, and an earlier search's answer is dropped. Its first hit opens
  // only if nothing was asked for while it ran (a parcel clicked then stays open); a search finding nothing leaves
  // the popup, and a trace it is running, alone.
  let searches = 0;
  searchForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const q = searchInput.value;
    const search = ++searches;
    const asked = askings;
    searchCount.textContent = "Searching…";
    const r = await getJSON(api("/api/search", { q }));
    if (search !== searches) return;
    searchList.replaceChildren();
    if (!r.ok) { searchCount.textContent = errorText(r, "The search failed."); return; }
    const { results, total } = r.body;
    if (!results.length) { searchCount.textContent = `Nothing found for "${q}".`; return; }
    searchCount.textContent = total > results.length
      ? `${results.length} of ${total.toLocaleString("en-US")} parcels (the first ${results.length}; add words to narrow it)`
      : plural(total, "parcel") + " found";
    results.forEach((hit, i) => {
      const item = el("li");
      const button = el("button", [hit.parcel_id, hit.site_address, hit.owner_name].filter(Boolean).join(" · "), "hit");
      button.type = "button";
      button.dataset.parcelId = hit.parcel_id;
      button.addEventListener("click", () => intoPopup(goToParcel(hit.parcel_id), button));
      button.addEventListener("keydown", (e) => {
        const items = [...searchList.querySelectorAll("button.hit")];
        const at = items.indexOf(button);
        if (e.key === "ArrowDown" && at < items.length - 1) { e.preventDefault(); items[at + 1].focus(); }
        if (e.key === "ArrowUp") { e.preventDefault(); (at > 0 ? items[at - 1] : searchInput).focus(); }
      });
      item.append(button);
      searchList.append(item);
      if (i === 0 && askings === asked) goToParcel(hit.parcel_id);
    });
  });
  searchInput.addEventListener("keydown", (e) => {
    const first = searchList.querySelector("button.hit");
    if (e.key === "ArrowDown" && first) { e.preventDefault(); first.focus(); }
  });

  // -- the attribute table --------------------------------------------------------------------------------------
  const COLUMNS = [
    ["parcel_id", "Parcel"], ["status", "Status"], ["site_address", "Site address"], ["owner_name", "Owner"],
    ["distance_ft", "Distance to main"], ["deadline", "Deadline if noticed on the run's date"], ["section", "Section"],
  ];
  const SHOWN_ROWS = 500;
  const table = {
    mode: "view", sort: "parcel_id", descending: false, hold: false,
    node: document.getElementById("attribute-table"),
    body: document.querySelector("#attribute-table tbody"),
    status: document.getElementById("table-status"),
    filter: document.getElementById("table-filter"),
    info: document.getElementById("table-info"),
    download: document.getElementById("table-download"),
    setSelectedCount() {
      const label = document.querySelector("label[for=table-mode-selected]");
      if (label) label.textContent = `Selected (${selection.ids.length.toLocaleString("en-US")})`;
    },
  };
  (function buildHead() {
    const tr = document.querySelector("#attribute-table thead tr");
    COLUMNS.forEach(([key, label]) => {
      const th = el("th");
      th.scope = "col";
      th.dataset.key = key;
      const button = el("button", label, "sort");
      button.type = "button";
      button.addEventListener("click", () => {
        table.descending = table.sort === key ? !table.descending : false;
        table.sort = key;
        renderTable();
      });
      th.append(button);
      tr.append(th);
    });
  })();
  document.querySelectorAll("input[name=table-mode]").forEach((radio) => radio.addEventListener("change", () => {
    table.mode = radio.value;
    renderTable();
  }));
  table.status.addEventListener("change", renderTable);
  table.filter.addEventListener("input", renderTable);

  function tableRows() {
    const source = table.mode === "view" ? viewParcels : selection.rows;
    const status = table.status.value;
    const needle = table.filter.value.trim().toLowerCase();
    let rows = source.filter((p) => (!status || p.status === status) &&
      (!needle || [p.parcel_id, p.site_address, p.owner_name].some((v) => v && String(v).toLowerCase().includes(needle))));
    const key = table.sort;
    const sign = table.descending ? -1 : 1;
    // Statuses sort by the words the table shows ("already connected" before "must connect"), not by their codes.
    const shown = (p) => (key === "status" && p[key] ? words(p[key]) : p[key]);
    rows = rows.slice().sort((a, b) => {
      const x = shown(a), y = shown(b);
      if (x === y) return 0;
      if (x === null || x === undefined || x === "") return 1;
      if (y === null || y === undefined || y === "") return -1;
      return (typeof x === "number" && typeof y === "number" ? x - y
        : String(x).localeCompare(String(y), "en", { numeric: true })) * sign;
    });
    return rows;
  }

  function renderTable() {
    document.querySelectorAll("#attribute-table th").forEach((th) => {
      th.setAttribute("aria-sort", th.dataset.key === table.sort ? (table.descending ? "descending" : "ascending") : "none");
    });
    // The distance is to the main that decides, as in the popup; a selection by distance lists the distance from what
    // it measured from instead, and the heading says which.
    const fromWithin = table.mode === "selected" && selection.source === "within" && selection.within;
    document.querySelector("#attribute-table th[data-key=distance_ft] button").textContent = !fromWithin
      ? "Distance to main"
      : `Distance from ${selection.measuredFrom}`;
    table.body.replaceChildren();
    if (table.mode === "view" && aggregated) {
      table.info.textContent = `${viewTotal.toLocaleString("en-US")} parcels in view: zoom in to list them.`;
      updateDownload([]);
      return;
    }
    const rows = tableRows();
    rows.slice(0, SHOWN_ROWS).forEach((p) => {
      const tr = el("tr");
      tr.tabIndex = 0;
      tr.dataset.parcelId = p.parcel_id;
      if (selection.ids.includes(String(p.parcel_id))) tr.classList.add("selected");
      COLUMNS.forEach(([key]) => {
        // The distance as the popup words it (the server's distance_text: "30.0 ft", "99.96 ft" within 100 ft); the
        // column still sorts by the number, and the download keeps the number.
        const value = key === "status" ? words(p[key]) : key === "deadline" ? p.deadline_text
          : key === "distance_ft" ? p.distance_text : p[key];
        const td = el("td", value === null || value === undefined ? "" : value);
        if (key === "distance_ft") td.className = "num";
        tr.append(td);
      });
      const pick = () => intoPopup(followRow(String(p.parcel_id)), tr);
      tr.addEventListener("click", pick);
      tr.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); pick(); } });
      table.body.append(tr);
    });
    const source = table.mode === "view" ? "in view" : "selected";
    table.info.textContent = rows.length > SHOWN_ROWS
      ? `${SHOWN_ROWS} of ${rows.length.toLocaleString("en-US")} parcels ${source} shown; the download has them all.`
      : `${plural(rows.length, "parcel")} ${source}${table.status.value ? ", " + words(table.status.value) : ""}.`;
    table.node.dataset.rows = String(rows.length);
    updateDownload(rows);
  }

  function markSelectedRows() {
    const focused = document.body.dataset.focused;
    table.body.querySelectorAll("tr").forEach((tr) => {
      tr.classList.toggle("selected", selection.ids.includes(tr.dataset.parcelId));
      tr.classList.toggle("focused", tr.dataset.parcelId === focused);
    });
  }

  function updateDownload(rows) {
    const status = table.status.value;
    let href = "#";
    const needle = table.filter.value.trim();
    if (table.mode === "view" && page.hasResults) {
      // exactly the rows shown: the view, the status and the text filter
      href = api("/api/results.csv", { bbox: bboxParam(), ...(status ? { status } : {}), ...(needle ? { q: needle } : {}) });
    } else if (table.mode === "selected" && selection.within && !table.filter.value && !status) {
      href = api("/api/within.csv", { ...selection.within, list: "parcels" });
    } else if (table.mode === "selected" && page.hasResults && rows.length) {
      const params = new URLSearchParams({ workspace: cfg.workspace });
      rows.forEach((p) => params.append("id", p.parcel_id));
      href = `/api/results.csv?${params.toString()}`;
    }
    table.download.href = href;
    table.download.tabIndex = href === "#" ? -1 : 0;  // nothing to download: not a stop for Tab, Enter cannot follow "#"
    table.download.classList.toggle("disabled", href === "#");
    table.download.setAttribute("aria-disabled", href === "#" ? "true" : "false");
  }

  // -- select by distance (public notification) -------------------------------------------------------------------
  const within = {
    panel: document.getElementById("within-panel"),
    from: document.getElementById("within-from"),
    distance: document.getElementById("within-distance"),
    draw: document.getElementById("within-draw"),
    finish: document.getElementById("within-finish"),
    run: document.getElementById("within-run"),
    result: document.getElementById("within-result"),
    points: [],
    shape: null,
    parcel: null,  // the parcel last clicked, searched or picked: "the selected parcel"
  };
  function withinSketch() {
    evidence.clearLayers();
    const kind = within.from.value;
    if (!within.points.length) return;
    const style = { ...evidenceStyle, color: "#ff7f00", weight: 3 };
    if (kind === "point") L.circleMarker(within.points[0], { ...style, radius: 6, fillOpacity: 0.6 }).addTo(evidence);
    else if (kind === "line") L.polyline(within.points, style).addTo(evidence);
    else L.polygon(within.points, { ...style, fillOpacity: 0.1 }).addTo(evidence);
  }
  function stopDrawing() {
    mode = null;
    within.finish.disabled = true;
    map.getContainer().style.cursor = "";
  }
  within.draw.addEventListener("click", () => {
    if (within.from.value === "parcel") {
      within.result.textContent = "Click a parcel on the map first; it is then the selected parcel.";
      return;
    }
    within.points = [];
    within.shape = null;
    mode = "within";
    within.finish.disabled = within.from.value === "point";
    map.getContainer().style.cursor = "crosshair";
    within.result.textContent = within.from.value === "point" ? "Click the point on the map."
      : `Click the ${within.from.value === "line" ? "line's" : "area's"} corners on the map, then Finish.`;
  });
  within.finish.addEventListener("click", () => {
    const kind = within.from.value;
    if ((kind === "line" && within.points.length < 2) || (kind === "area" && within.points.length < 3)) {
      within.result.textContent = kind === "line" ? "A line needs two points or more." : "An area needs three points or more.";
      return;
    }
    stopDrawing();
    within.result.textContent = "Drawn: give the distance and find the parcels.";
  });
  within.from.addEventListener("change", () => { within.points = []; within.shape = null; stopDrawing(); evidence.clearLayers(); });
  // Enter in the distance box finds the parcels, as Enter in the search box searches (it did nothing: the box is in
  // no form, and a keyboard user had to Tab on to the button).
  within.distance.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); within.run.click(); }
  });
  map.on("click", (e) => {
    if (mode !== "within") return;
    within.points.push(e.latlng);
    withinSketch();
    if (within.from.value === "point") {
      stopDrawing();
      within.result.textContent = "Point placed: give the distance and find the parcels.";
    }
  });
  function drawnGeometry() {
    const ll = within.points.map((p) => [Number(p.lng.toFixed(7)), Number(p.lat.toFixed(7))]);
    const kind = within.from.value;
    if (kind === "point" && ll.length) return { type: "Point", coordinates: ll[0] };
    if (kind === "line" && ll.length >= 2) return { type: "LineString", coordinates: ll };
    if (kind === "area" && ll.length >= 3) return { type: "Polygon", coordinates: [[...ll, ll[0]]] };
    return null;
  }
  within.run.addEventListener("click", async () => {
    const distance = within.distance.value.trim();
    if (distance === "" || Number(distance) < 0 || Number.isNaN(Number(distance))) {
      within.result.textContent = "Give the distance in feet (0 or more).";
      within.distance.focus();
      return;
    }
    let params;
    if (within.from.value === "parcel") {
      if (!within.parcel) {
        within.result.textContent = "Click a parcel on the map first; it is then the selected parcel.";
        return;
      }
      params = { distance_ft: distance, parcel: within.parcel };
    } else {
      const geometry = drawnGeometry();
      if (!geometry || mode) {
        within.result.textContent = "Draw the feature first (Draw, then click on the map).";
        return;
      }
      params = { distance_ft: distance, geometry: JSON.stringify(geometry) };
    }
    within.result.textContent = "Finding parcels…";
    const r = await getJSON(api("/api/within", params));
    if (!r.ok) { within.result.textContent = errorText(r, "Could not select by distance."); return; }
    const data = r.body;
    withinLayer.clearLayers();
    L.geoJSON(data.buffer, { ...evidenceStyle, style: { color: "#ff7f00", weight: 3, dashArray: "8 6", fillColor: "#ff7f00",
                                                         fillOpacity: 0.08 } }).addTo(withinLayer);
    const from = within.from.value === "parcel" ? within.parcel : null;
    selection.ids = data.parcels.map((p) => String(p.parcel_id));
    // Measured from the parcel or the drawn feature, to the tenth of a foot, worded as the popup words a distance.
    selection.rows = data.parcels.map((p) => ({ ...p, distance_ft: p.distance_to_feature_ft,
      distance_text: typeof p.distance_to_feature_ft === "number" ? `${p.distance_to_feature_ft.toFixed(1)} ft` : null }));
    selection.source = "within";
    selection.within = params;
    focusLayer.clearLayers();
    drawSelection(data.outlines);
    document.body.dataset.selected = selection.ids.join("\n");
    map.fitBounds(L.geoJSON(data.buffer).getBounds(), { maxZoom: 19 });
    within.result.replaceChildren();
    const what = from ? `parcel ${from}` : `the ${within.from.value} drawn`;
    selection.measuredFrom = what;
    within.result.append(el("p", `${plural(data.total, "parcel")} within ${num(data.distance_ft, "ft")} of ${what}; ` +
      `${plural(data.mailing_rows, "owner mailing address", "owner mailing addresses")}` +
      (data.no_address ? ` (${plural(data.no_address, "parcel")} with no mailing address in the data)` : "") + "."));
    const links = el("p");
    const mailing = el("a", "Mailing list (CSV)", "within-mailing");
    mailing.href = api("/api/within.csv", { ...params, list: "mailing" });
    const parcels = el("a", "Parcels (CSV)", "within-parcels");
    parcels.href = api("/api/within.csv", { ...params, list: "parcels" });
    links.append(mailing, " · ", parcels);
    within.result.append(links);
    within.result.dataset.total = String(data.total);
    document.getElementById("table-mode-selected").checked = true;
    table.mode = "selected";
    table.setSelectedCount();
    renderTable();
  });

  // -- print ----------------------------------------------------------------------------------------------------
  const printLink = document.getElementById("print-link");
  if (printLink) printLink.addEventListener("click", () => {
    const params = new URLSearchParams({ bbox: bboxParam(), title: document.getElementById("print-title").value,
                                         workspace: cfg.workspace });
    if (selection.source === "within" && selection.within) {
      Object.entries(selection.within).forEach(([k, v]) => params.append(k, v));
    } else {
      selection.ids.forEach((id) => params.append("selected", id));
    }
    printLink.href = `/print.pdf?${params.toString()}`;
  });

  document.querySelectorAll("a.dl-view").forEach((a) => a.addEventListener("click", () => {
    a.href = api(`/api/results.${a.dataset.fmt}`, { bbox: bboxParam() });
  }));

  // -- planning an extension ------------------------------------------------------------------------------------
  // Draw or load a main, evaluate it (POST /plans/evaluate), and show the plan; reopen a saved one (?plan=NAME).
  const panel = document.getElementById("plan-panel");
  const planOutput = panel ? document.getElementById("plan-result") : null;
  let drawn = [];
  const planStyle = passive("sewerplan-evidence");
  if (panel) {
    const startButton = document.getElementById("draw-start");
    const finishButton = document.getElementById("draw-finish");
    const evaluateButton = document.getElementById("plan-evaluate");
    const output = planOutput;
    const material = document.getElementById("plan-material");
    let preview = null;
    let evaluating = false;
    const redraw = () => {
      if (preview) planLayer.removeLayer(preview);
      preview = L.polyline(drawn, { ...planStyle, color: "#1f78b4", weight: 5, dashArray: mode === "plan" ? "6 6" : null })
        .addTo(planLayer);
      evaluateButton.disabled = mode === "plan" || (drawn.length < 2 && !document.getElementById("plan-streets").value.trim());
    };
    panel.sewerplanRedraw = redraw;
    document.getElementById("plan-streets").addEventListener("input", () => {
      if (mode !== "plan") evaluateButton.disabled = drawn.length < 2 && !document.getElementById("plan-streets").value.trim();
    });
    startButton.addEventListener("click", () => {
      planLayer.clearLayers(); preview = null; drawn = []; mode = "plan";
      finishButton.disabled = false; map.getContainer().style.cursor = "crosshair"; redraw();
    });
    finishButton.addEventListener("click", () => {
      mode = null; finishButton.disabled = true; map.getContainer().style.cursor = ""; redraw();
    });
    map.on("click", (e) => { if (mode === "plan") { drawn.push(e.latlng); redraw(); } });
    document.getElementById("plan-file").addEventListener("change", async (event) => {
      const file = event.target.files[0];
      if (!file) return;
      // Read on the server as `sewerplan plan --proposed` reads it: its CRS, a MultiLineString as QGIS saves one.
      output.textContent = "Reading the file…";
      const text = await file.text();
      event.target.value = "";  // choosing the same file again (after drawing over it) loads it again
      const r = await fetchJSON("/plans/line", { method: "POST",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": cfg.csrf },
        body: JSON.stringify({ name: file.name, text, crs: document.getElementById("plan-file-crs").value.trim() || null }) });
      if (!r.ok) {
        // The file replaced nothing: a line already on the map stays, and is what "Evaluate" would evaluate.
        const kept = drawn.length >= 2 ? " The main on the map is still the one from before this file: Evaluate evaluates that one." : "";
        output.textContent = errorText(r, "Could not read the file.") + kept;
        return;
      }
      const found = r.body;
      output.textContent = found.note || "";  // a plan's own export: its proposed main alone was read
      // The loaded line replaces one being drawn: drawing ends, as "Finish" ends it.
      planLayer.clearLayers(); preview = null; mode = null;
      finishButton.disabled = true; map.getContainer().style.cursor = "";
      drawn = found.line.coordinates.map(([lon, lat]) => L.latLng(lat, lon));
      redraw(); map.fitBounds(L.latLngBounds(drawn), { maxZoom: 18 });
    });
    evaluateButton.addEventListener("click", async () => {
      // One evaluation at a time: a double click sent two, and with "save" ticked the second's "is saved
      // already" (the first click had just saved it) replaced the plan in the panel.
      if (evaluating) return;
      evaluating = true;
      evaluateButton.disabled = true;
      try {
        await evaluatePlan();
      } finally {
        evaluating = false;
        evaluateButton.disabled = mode === "plan" || (drawn.length < 2 && !document.getElementById("plan-streets").value.trim());
      }
    });
    const evaluatePlan = async () => {
      output.textContent = "Evaluating…";
      const streetsRun = document.getElementById("plan-streets").value.trim();
      const body = { geometry: { type: "LineString", coordinates: drawn.map((p) => [p.lng, p.lat]) },
                     streets_run: drawn.length >= 2 ? null : streetsRun || null,
                     diameter_in: Number(document.getElementById("plan-diameter").value),
                     material: material.value.trim() || null,
                     name: document.getElementById("plan-name").value,
                     save: document.getElementById("plan-save").checked,
                     replace: document.getElementById("plan-replace").checked };
      const r = await fetchJSON("/plans/evaluate", { method: "POST",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": cfg.csrf }, body: JSON.stringify(body) });
      if (!r.ok) { output.textContent = errorText(r, "Could not evaluate."); return; }
      showPlan(r.body, output);
      // A run of streets was never on the map before: show where it lies (a drawn or loaded line is in view).
      if (body.streets_run) map.fitBounds(L.geoJSON(r.body.map.line).getBounds().pad(0.3), { maxZoom: 18 });
    };
  }

  // The "replace" tick belongs to the name it was given for: renaming a reopened scenario (or any ticked one)
  // unticks it, so saving under another scenario's name is refused instead of overwriting that one.
  let reopenedName = null;
  const planName = document.getElementById("plan-name");
  if (planName) {
    planName.addEventListener("input", () => {
      document.getElementById("plan-replace").checked = reopenedName !== null && planName.value === reopenedName;
    });
  }
  const reopen = new URLSearchParams(window.location.search).get("plan");
  if (reopen) {
    (async () => {
      const r = await getJSON(`/plans/${encodeURIComponent(reopen)}.json`);
      if (!r.ok) {
        if (planOutput) planOutput.textContent = errorText(r, `Could not open ${reopen}.`);
        return;
      }
      const plan = r.body;
      showPlan(plan, planOutput);
      map.fitBounds(L.geoJSON(plan.map.line).getBounds().pad(0.3), { maxZoom: 18 });
      if (panel) {  // ready to re-evaluate: the same line, diameter, material and name
        // the line as drawn (with any part not laid), so evaluating it again says what is not laid
        drawn = (plan.map.drawn || plan.map.line).coordinates.map(([lon, lat]) => L.latLng(lat, lon));
        document.getElementById("plan-diameter").value = plan.diameter_in;
        document.getElementById("plan-material").value = plan.material || "";
        document.getElementById("plan-name").value = plan.name;
        document.getElementById("plan-replace").checked = true;  // reopened to be changed: saving updates it
        reopenedName = plan.name;
        document.getElementById("plan-evaluate").disabled = false;
        panel.scrollIntoView({ block: "nearest" });
      }
    })();
  }

  function showPlan(plan, output) {
    planLayer.clearLayers();
    L.geoJSON(plan.map.line, { ...planStyle, style: { color: "#1f78b4", weight: 5 } }).addTo(planLayer);
    if (plan.map.connecting) {
      L.geoJSON(plan.map.connecting, { ...planStyle, style: { color: "#1f78b4", weight: 5, dashArray: "8 6" } }).addTo(planLayer);
    }
    // Each part drawn past the manhole it joins, or over an existing main, and not laid: grey, so the plan is the
    // blue (one at each end of a main drawn over the sewer at both; a scenario saved before has not_laid alone).
    (plan.map.not_laid_parts || (plan.map.not_laid ? [plan.map.not_laid] : [])).forEach((g) =>
      L.geoJSON(g, { ...planStyle, style: { color: "#777", weight: 3, dashArray: "2 6" } }).addTo(planLayer));
    plan.map.parcels.forEach((g) => L.geoJSON(g, { ...planStyle, style: { color: "#e31a1c", weight: 3, fillOpacity: 0.15 } }).addTo(planLayer));
    (plan.map.vacant || []).forEach((g) => L.geoJSON(g, { ...planStyle, style: { color: "#ff7f00", weight: 3, fillOpacity: 0.15 } }).addTo(planLayer));
    // Private parcels the main crosses (easements needed), outlined in purple, and where it crosses existing mains.
    (plan.map.easements || []).forEach((g) => L.geoJSON(g, { ...planStyle, style: { color: "#6a3d9a", weight: 3, dashArray: "4 4", fillOpacity: 0 } }).addTo(planLayer));
    // Its rings and manholes name themselves on hover; a click on one is the parcel's (or manhole's) under it.
    planMarks.clearLayers();
    planLayer.addLayer(planMarks);
    const mark = (geometry, style, text) => L.geoJSON(geometry, { pointToLayer: (f, ll) => L.circleMarker(ll, {
      renderer, ...style }).bindTooltip(() => el("span", text)).on("click", clickUnder) }).addTo(planMarks);
    (plan.map.crossings || []).forEach((c) => mark(c.geometry, { radius: 8, color: "#e31a1c", weight: 3, fillOpacity: 0 },
      `${words(c.kind)} ${c.main_id} at station ${num(Math.round(c.station_ft), "ft")}`));
    plan.map.manholes.forEach((m) => mark(m.geometry, { radius: 6, color: m.existing ? "#000" : "#1f78b4", weight: 2,
      fillColor: m.existing ? "#000" : "#fff", fillOpacity: 1 }, `${m.id}: ${m.reason}`));
    if (!output) return;
    output.replaceChildren();
    const list = el("ul", null, "plan-summary");
    const add = (text, cls) => list.append(el("li", text, cls));
    const newManholes = plan.manholes.filter((m) => !m.existing).length;
    add(`${plan.name ? plan.name + ": " : ""}${num(Math.round(plan.length_ft), "ft")} of ${num(plan.diameter_in, "in")}` +
        `${plan.material ? " " + plan.material : ""} main, ${plural(newManholes, "new manhole")}` +
        (plan.connecting_main ? ` (with a ${num(Math.round(plan.connecting_main.length_ft), "ft")} connecting main to ${plan.connecting_main.to_manhole})` : ""));
    (plan.not_laid_parts || (plan.not_laid ? [plan.not_laid] : [])).forEach((part) => {
      if (part.along) {  // drawn over an existing main to the manhole it joins, or from the manhole it ends at
        const mains = part.along.split(", ");  // as analysis.plans.existing_mains_words names them
        add(`Not laid: the ${part.length_words} drawn ${part.direction} of ${part.beyond_manhole} over ` +
            (mains.length > 1
              ? `existing mains ${mains.slice(0, -1).join(", ")} and ${mains[mains.length - 1]}, which are there already`
              : `existing main ${part.along}, which is there already`));
      } else {  // drawn on past the manhole it passes through: that part is not in the plan
        add(`Not laid: the ${part.length_words} drawn ${part.direction} of ` +
            `${part.beyond_manhole}, a second main draining into it, to plan on its own`);
      }
    });
    if ((plan.beyond_parcels_ft || 0) >= 1) {  // across the town line: nobody there is in the data
      add(`Beyond the town's parcels: ${num(Math.round(plan.beyond_parcels_ft), "ft")} of the main lie farther from ` +
          "them than a parcel can be reached from (across the town line, or past where the parcels layer stops): no " +
          "parcel there is in the data, so who the main would reach there, and their part of the petition and the " +
          "cost, are not in this plan");
    }
    const unknown = (plan.flow && plan.flow.units_unknown.length) || 0;
    add(`Newly required to connect: ${plural(plan.newly_mandated.length, "parcel")} (${plural(Number(plan.units) || 0, "living unit")}` +
        `${unknown ? `; units unknown for ${plural(unknown, "parcel")}` : ""}); ${plural(plan.private_systems.length, "septic system")} retired` +
        `${(plan.vacant_benefiting || []).length ? `; ${plural(plan.vacant_benefiting.length, "vacant lot")} benefit` : ""}` +
        `${plan.held_by_service_area.length ? `; ${plural(plan.held_by_service_area.length, "parcel")} outside every service area` : ""}`);
    if (plan.petition.applies && !plan.petition.benefiting_owners) {
      add(`Petition ${plan.petition.cited}: no owner benefits, so there is no petition to sign`);  // not "0 of 0"
    } else if (plan.petition.applies) {
      add(`Petition ${plan.petition.cited}: ${plan.petition.signatures_needed} of ` +
          `${plural(plan.petition.benefiting_owners, "benefiting owner")} make a majority`);
    }
    add(`Estimated cost $${plan.cost.total.toLocaleString("en-US", { minimumFractionDigits: 2 })}` +
        (plan.units ? `, $${Math.round(plan.cost.total / plan.units).toLocaleString("en-US")} per newly connected living unit` : ""));
    // The law it was evaluated under: a run under another profile can land between two evaluations, and the map
    // then shows one profile's results beside a plan of another's.
    if (plan.profile) {
      const set = Object.entries(plan.profile_overrides || {}).map(([k, v]) => `${k}=${v}`).join(", ");
      add(`Evaluated under the ${plan.profile} profile` + (plan.profile_version ? `, version ${plan.profile_version}` : "") +
          (set ? `, with ${set}` : ""), "plan-profile");
    }
    plan.design_checks.forEach((c) => {
      const checkWords = words(c.check);
      add(`${checkWords.charAt(0).toUpperCase() + checkWords.slice(1)}: ${c.verdict} ${c.cited}. ${c.message}`,
          `verdict ${c.verdict.replace(/ /g, "-")}`);
    });
    (plan.requirements || []).forEach((r) => add(`Requirement, ${words(r.requirement)} ${r.cited}: ${r.text}`,
                                                 "requirement"));
    (plan.test_sections || []).forEach((s) => add(`Test section ${s.number}: ${s.from_manhole} to ${s.to_manhole}, ` +
      `${num(s.length_ft, "ft")}, leakage at most ${num(s.allowance_gpd)} gallons per day`, "test-section"));
    output.append(list);
    output.dataset.newlyMandated = String(plan.newly_mandated.length);
  }

  // -- running the analysis -------------------------------------------------------------------------------------
  const runForm = document.getElementById("run-form");
  if (runForm) {
    // The settings and notice reason filled in are the latest run's, for its profile: another profile starts
    // without them (its thresholds and sections differ; Poughkeepsie's reasons mean nothing to Fort Plain), and
    // choosing the run's profile again brings them back. The reasons offered are the chosen profile's own (from its
    // file, page.noticeReasons): a reason the profile does not accept would only have the run refused.
    const chosen = runForm.elements.profile, filledFor = chosen.value;
    const filled = { set: runForm.elements.set.value, notice_reason: runForm.elements.notice_reason.value };
    const offerReasons = (profile, reason) => {
      const accepted = (page.noticeReasons || {})[profile] || [];
      const select = runForm.elements.notice_reason;
      select.replaceChildren(new Option("(none)", ""), ...accepted.map((code) => new Option(words(code), code)));
      select.value = accepted.includes(reason) ? reason : "";
    };
    chosen.addEventListener("change", () => {
      const own = chosen.value === filledFor;
      runForm.elements.set.value = own ? filled.set : "";
      offerReasons(chosen.value, own ? filled.notice_reason : "");
    });
    const runButton = runForm.querySelector("button[type=submit]");
    // A run followed to its end: its steps said, Run pressed once only while it goes (a double click had said
    // "a run is in progress" of the planner's own), the map reloaded when it is done.
    const followRun = async (job) => {
      const status = document.getElementById("job");
      runButton.disabled = true;
      try {
        while (job.state === "queued" || job.state === "running") {
          status.textContent = `Running: ${job.step || "starting"}…`;
          await new Promise((r) => setTimeout(r, 700));
          const polled = await getJSON(`/api/jobs/${encodeURIComponent(job.id)}`);
          if (!polled.ok) { status.textContent = errorText(polled, "Lost track of the run; reload the page to see it."); return; }
          job = polled.body;
        }
        if (job.state === "done") { status.textContent = "Done: reloading the map."; window.location.reload(); }
        else status.textContent = `Failed: ${job.error}`;
      } finally {
        if (job.state !== "done") runButton.disabled = false;
      }
    };
    runForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (runButton.disabled) return;
      runButton.disabled = true;
      const status = document.getElementById("job");
      status.textContent = "Starting…";
      const started = await fetchJSON(runForm.action, { method: "POST", body: new FormData(runForm),
                                                        headers: { "X-CSRF-Token": cfg.csrf } });
      if (!started.ok) { status.textContent = errorText(started, "Could not start."); runButton.disabled = false; return; }
      await followRun(started.body);
    });
    // opened or reloaded while a run goes on this store: follow it, rather than show the old results as current
    if (page.runningJob) {
      getJSON(`/api/jobs/${encodeURIComponent(page.runningJob)}`).then((r) => { if (r.ok) followRun(r.body); });
    }
  }

  // -- the sidebar on a small screen: a button shows and hides it ---------------------------------------------
  toggle.addEventListener("click", () => showSidebar(!document.body.classList.contains("sidebar-open")));

  // -- start: the view, then a parcel asked for in the address (?parcel=ID, from the notices or summary page) -----
  refresh();
  const asked = new URLSearchParams(window.location.search).get("parcel");
  if (asked) goToParcel(asked);
})();
