// sewerplan map: loads parcels, mains and manholes for the current view from the JSON API, draws them, and
// handles clicks (parcel popup, measuring line, trace; manhole sewershed), search, runs and downloads.
// Every value shown comes from data users upload: it is set with textContent, never as HTML.
(function () {
  "use strict";
  const cfg = document.getElementById("sewerplan-config").dataset;
  const map = window.sewerplanMap;
  const control = window.sewerplanControl;
  const colours = JSON.parse(cfg.colours);
  const renderer = L.canvas({ padding: 0.3 });

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  const layers = {
    parcels: L.geoJSON(null, {
      renderer: renderer,
      style: (f) => ({
        color: "#555", weight: f.properties.count ? 0 : 0.6,
        fillColor: colours[f.properties.status] || "#999", fillOpacity: f.properties.count ? 0.45 : 0.6,
      }),
      onEachFeature: (f, layer) => {
        if (f.properties.parcel_id !== undefined) layer.on("click", (e) => {
          if (!drawing) showParcel(f.properties.parcel_id, e.latlng);
        });
      },
    }),
    mains: L.geoJSON(null, {
      renderer: renderer,
      style: (f) => ({ color: f.properties.sewer_type === "storm" ? "#74a9cf" : "#3a3a3a",
                       weight: Math.max(1.5, Math.min(7, (f.properties.diameter_in || 8) / 3)),
                       dashArray: f.properties.status === "abandoned" ? "4 4" : null }),
      onEachFeature: (f, layer) => layer.bindTooltip(() => el("span", `${f.properties.main_id} · ${f.properties.diameter_in ?? "?"} in`)),
    }),
    manholes: L.geoJSON(null, {
      pointToLayer: (f, latlng) => L.circleMarker(latlng, { renderer: renderer, radius: 4, color: "#222", weight: 1,
                                                             fillColor: "#fff", fillOpacity: 1 }),
      onEachFeature: (f, layer) => layer.on("click", (e) => showSewershed(f.properties.manhole_id, e.latlng)),
    }),
    streets: L.geoJSON(null, {
      renderer: renderer,
      style: { color: "#ffffff", weight: 9, opacity: 0.9 },
      onEachFeature: (f, layer) => layer.bindTooltip(() => el("span", f.properties.street_name || "street")),
    }),
    buildings: L.geoJSON(null, {
      renderer: renderer,
      style: (f) => ({
        color: f.properties.rear_building ? "#7b3294" : ((f.properties.required_laterals || 1) > 1 ? "#e66101" : "#444"),
        weight: f.properties.rear_building || (f.properties.required_laterals || 1) > 1 ? 2.5 : 1,
        dashArray: (f.properties.required_laterals || 1) > 1 ? "4 3" : null, fillColor: "#fafafa", fillOpacity: 0.8,
      }),
      onEachFeature: (f, layer) => {
        layer.bindTooltip(() => el("span", f.properties.reason ||
          `${f.properties.building_id} · ${f.properties.units ?? "?"} units`));
        // A click on a building opens its parcel, as a click beside it would.
        if (f.properties.parcel_id) layer.on("click", (e) => showParcel(f.properties.parcel_id, e.latlng));
      },
    }),
    plants: L.geoJSON(null, {
      pointToLayer: (f, latlng) => L.circleMarker(latlng, { radius: 9, color: "#000", fillColor: "#756bb1", fillOpacity: 1 }),
      onEachFeature: (f, layer) => layer.bindTooltip(() => el("span", f.properties.name || f.properties.outfall_name || "treatment plant")),
    }),
  };
  const evidence = L.layerGroup().addTo(map);
  const planLayer = L.layerGroup().addTo(map);
  let drawing = false;
  let drawn = [];
  control.addOverlay(layers.streets, "Streets");
  control.addOverlay(layers.parcels, "Parcels by status");
  control.addOverlay(layers.buildings, "Buildings");
  control.addOverlay(layers.mains, "Sewer mains");
  control.addOverlay(layers.manholes, "Manholes");
  control.addOverlay(layers.plants, "Treatment plant");
  control.addOverlay(evidence, "Measuring lines and traces");
  ["streets", "parcels", "buildings", "mains", "manholes", "plants"].forEach((name) => layers[name].addTo(map));

  let pending = null;
  function bboxParam() {
    const b = map.getBounds();
    return [b.getWest(), b.getSouth(), b.getEast(), b.getNorth()].map((v) => v.toFixed(6)).join(",");
  }

  async function refresh() {
    if (pending) pending.abort();
    pending = new AbortController();
    const signal = pending.signal;
    const zoom = map.getZoom();
    const query = `bbox=${bboxParam()}&zoom=${zoom}`;
    const wanted = { streets: zoom >= 14, parcels: true, buildings: zoom >= 17, mains: zoom >= 13,
                     manholes: zoom >= 16, plants: true };
    document.body.dataset.loading = "1";
    try {
      await Promise.all(Object.entries(wanted).map(async ([name, want]) => {
        if (!want) { layers[name].clearLayers(); return; }
        const response = await fetch(`/api/layers/${name}?${query}`, { signal, credentials: "same-origin" });
        if (!response.ok) return;
        const data = await response.json();
        layers[name].clearLayers();
        layers[name].addData(data);
        if (name === "parcels") document.body.dataset.aggregated = data.aggregated ? "1" : "0";
      }));
      document.body.dataset.loaded = String(Date.now());
    } catch (err) {
      if (err.name !== "AbortError") console.error(err);
    } finally {
      document.body.dataset.loading = "0";
    }
  }
  map.on("moveend", refresh);
  refresh();

  function row(dl, label, value) {
    if (value === null || value === undefined || value === "") return;
    dl.append(el("dt", label), el("dd", value));
  }

  async function showParcel(parcelId, latlng) {
    const response = await fetch(`/api/parcels/${encodeURIComponent(parcelId)}`, { credentials: "same-origin" });
    if (!response.ok) return;
    const data = await response.json();
    const p = data.parcel.properties;
    const box = el("div", null, "popup parcel-popup");
    box.append(el("h4", p.parcel_id));
    const dl = el("dl");
    row(dl, "Site address", p.site_address);
    row(dl, "Owner", p.owner_name);
    row(dl, "Status", (p.status || "").replaceAll("_", " "));
    row(dl, "Distance", p.distance_ft === null ? null : `${Number(p.distance_ft).toFixed(1)} ft to ${p.main_id}`);
    row(dl, "Rule", p.rule);
    row(dl, "Section", p.section);
    row(dl, "Reason", p.reason);
    row(dl, "Deadline", p.deadline);
    row(dl, "Control manhole", p.control_manhole);
    (data.rows || []).forEach(([label, value]) => row(dl, label, value));
    box.append(dl);
    const button = el("button", "Trace to the plant", "trace-button");
    button.type = "button";
    const result = el("p", null, "trace-result");
    button.addEventListener("click", () => traceParcel(parcelId, result));
    box.append(button, result);
    evidence.clearLayers();
    if (data.measuring_line) {
      L.geoJSON(data.measuring_line, { style: { color: "#e41a1c", weight: 3, dashArray: "6 4" } }).addTo(evidence);
    }
    L.popup({ maxWidth: 340, maxHeight: 380, autoPanPadding: [20, 20] }).setLatLng(latlng).setContent(box).openOn(map);
  }

  async function traceParcel(parcelId, target) {
    const response = await fetch(`/api/trace?parcel=${encodeURIComponent(parcelId)}`, { credentials: "same-origin" });
    const data = await response.json();
    if (!response.ok) { target.textContent = data.error ? data.error.message : "No trace."; return; }
    L.geoJSON(data.geojson, { style: { color: "#00a651", weight: 6, opacity: 0.8 } }).addTo(evidence);
    L.geoJSON(data.control_manhole_geojson, {
      pointToLayer: (f, ll) => L.circleMarker(ll, { radius: 8, color: "#00a651", weight: 3, fillOpacity: 0 }),
    }).addTo(evidence);
    target.textContent = data.problem
      ? data.problem
      : `Control manhole ${data.control_manhole}; ${Number(data.length_ft).toLocaleString()} ft through ` +
        `${data.mains.length} mains to ${data.outfall}.`;
    target.dataset.controlManhole = data.control_manhole || "";
  }

  async function showSewershed(manholeId, latlng) {
    const response = await fetch(`/api/sewershed?manhole=${encodeURIComponent(manholeId)}`, { credentials: "same-origin" });
    const data = await response.json();
    const box = el("div", null, "popup sewershed-popup");
    box.append(el("h4", `Manhole ${manholeId}`));
    if (!response.ok) {
      box.append(el("p", data.error ? data.error.message : "Not in the network."));
    } else {
      evidence.clearLayers();
      L.geoJSON(data.geojson, { style: { color: "#ff7f00", weight: 5, opacity: 0.85 } }).addTo(evidence);
      box.append(el("p", `Drains ${data.mains.length} mains and ${data.manholes.length} manholes; ` +
        `${data.parcels.length} parcels with ${data.units} living units` +
        (data.units_unknown ? ` (${data.units_unknown} unknown)` : "") +
        `; about ${Math.round(data.flow_gpd).toLocaleString()} gallons per day.`));
    }
    L.popup({ maxWidth: 340, maxHeight: 380, autoPanPadding: [20, 20] }).setLatLng(latlng).setContent(box).openOn(map);
  }

  const searchForm = document.getElementById("search-form");
  const searchList = document.getElementById("search-results");
  searchForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const q = document.getElementById("search").value;
    const response = await fetch(`/api/search?q=${encodeURIComponent(q)}`, { credentials: "same-origin" });
    const data = await response.json();
    searchList.replaceChildren();
    if (!data.results.length) { searchList.append(el("li", "Nothing found.")); return; }
    data.results.forEach((r, i) => {
      const item = el("li", `${r.parcel_id} · ${r.site_address || ""} · ${r.owner_name || ""}`);
      const go = () => map.fitBounds([[r.bbox[1], r.bbox[0]], [r.bbox[3], r.bbox[2]]], { maxZoom: 19 });
      item.addEventListener("click", go);
      searchList.append(item);
      if (i === 0) go();
    });
  });

  document.querySelectorAll("a.dl-view").forEach((a) => a.addEventListener("click", (event) => {
    a.href = `/api/results.${a.dataset.fmt}?bbox=${bboxParam()}`;
  }));

  // --- planning an extension ---------------------------------------------------------------------------------
  // Draw or load a main, evaluate it (POST /plans/evaluate), and show the plan; reopen a saved one (?plan=NAME).
  const panel = document.getElementById("plan-panel");
  const planOutput = panel ? document.getElementById("plan-result") : null;
  if (panel) {
    const startButton = document.getElementById("draw-start");
    const finishButton = document.getElementById("draw-finish");
    const evaluateButton = document.getElementById("plan-evaluate");
    const output = planOutput;
    // The pipe material: checked against the materials the town's law lists (Fort Plain § 144-18A).
    const materialLabel = el("label", "Material ");
    const material = el("input");
    material.id = "plan-material";
    material.size = 14;
    material.placeholder = "e.g. reinforced concrete";
    material.setAttribute("list", "plan-materials");
    const materials = el("datalist");
    materials.id = "plan-materials";
    ["reinforced concrete", "extra-strength vitrified clay", "asbestos-cement", "PVC", "ductile iron"].forEach(
      (m) => { const o = el("option"); o.value = m; materials.append(o); });
    materialLabel.append(material, materials);
    document.getElementById("plan-diameter").closest("label").after(" ", materialLabel);
    let preview = null;
    const redraw = () => {
      if (preview) planLayer.removeLayer(preview);
      preview = L.polyline(drawn, { color: "#1f78b4", weight: 5, dashArray: drawing ? "6 6" : null }).addTo(planLayer);
      evaluateButton.disabled = drawing || (drawn.length < 2 && !document.getElementById("plan-streets").value.trim());
    };
    panel.sewerplanRedraw = redraw;
    document.getElementById("plan-streets").addEventListener("input", () => {
      if (!drawing) evaluateButton.disabled = drawn.length < 2 && !document.getElementById("plan-streets").value.trim();
    });
    startButton.addEventListener("click", () => {
      planLayer.clearLayers(); preview = null; drawn = []; drawing = true;
      finishButton.disabled = false; map.getContainer().style.cursor = "crosshair"; redraw();
    });
    finishButton.addEventListener("click", () => {
      drawing = false; finishButton.disabled = true; map.getContainer().style.cursor = ""; redraw();
    });
    map.on("click", (e) => { if (drawing) { drawn.push(e.latlng); redraw(); } });
    document.getElementById("plan-file").addEventListener("change", async (event) => {
      const file = event.target.files[0];
      if (!file) return;
      const data = JSON.parse(await file.text());
      const features = data.type === "FeatureCollection" ? data.features : [data.type === "Feature" ? data : { geometry: data }];
      const line = features.map((f) => f.geometry).find((g) => g && g.type === "LineString");
      if (!line) { output.textContent = "The file holds no LineString."; return; }
      planLayer.clearLayers(); preview = null; drawing = false;
      drawn = line.coordinates.map(([lon, lat]) => L.latLng(lat, lon));
      redraw(); map.fitBounds(L.latLngBounds(drawn), { maxZoom: 18 });
    });
    evaluateButton.addEventListener("click", async () => {
      output.textContent = "Evaluating…";
      const streetsRun = document.getElementById("plan-streets").value.trim();
      const body = { geometry: { type: "LineString", coordinates: drawn.map((p) => [p.lng, p.lat]) },
                     streets_run: drawn.length >= 2 ? null : streetsRun || null,
                     diameter_in: Number(document.getElementById("plan-diameter").value),
                     material: material.value.trim() || null,
                     name: document.getElementById("plan-name").value,
                     save: document.getElementById("plan-save").checked };
      const response = await fetch("/plans/evaluate", { method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": cfg.csrf }, body: JSON.stringify(body) });
      const plan = await response.json();
      if (!response.ok) { output.textContent = plan.error ? plan.error.message : "Could not evaluate."; return; }
      showPlan(plan, output);
    });
  }

  const reopen = new URLSearchParams(window.location.search).get("plan");
  if (reopen) {
    (async () => {
      const response = await fetch(`/plans/${encodeURIComponent(reopen)}.json`, { credentials: "same-origin" });
      const plan = await response.json();
      if (!response.ok) {
        if (planOutput) planOutput.textContent = plan.error ? plan.error.message : `Could not open ${reopen}.`;
        return;
      }
      showPlan(plan, planOutput);
      map.fitBounds(L.geoJSON(plan.map.line).getBounds().pad(0.3), { maxZoom: 18 });
      if (panel) {  // ready to re-evaluate: the same line, diameter, material and name
        drawn = plan.map.line.coordinates.map(([lon, lat]) => L.latLng(lat, lon));
        document.getElementById("plan-diameter").value = plan.diameter_in;
        document.getElementById("plan-material").value = plan.material || "";
        document.getElementById("plan-name").value = plan.name;
        document.getElementById("plan-evaluate").disabled = false;
        panel.scrollIntoView({ block: "nearest" });
      }
    })();
  }

  function showPlan(plan, output) {
    planLayer.clearLayers();
    L.geoJSON(plan.map.line, { style: { color: "#1f78b4", weight: 5 } }).addTo(planLayer);
    if (plan.map.connecting) {
      L.geoJSON(plan.map.connecting, { style: { color: "#1f78b4", weight: 5, dashArray: "8 6" } }).addTo(planLayer);
    }
    plan.map.parcels.forEach((g) => L.geoJSON(g, { style: { color: "#e31a1c", weight: 3, fillOpacity: 0.15 } }).addTo(planLayer));
    (plan.map.vacant || []).forEach((g) => L.geoJSON(g, { style: { color: "#ff7f00", weight: 3, fillOpacity: 0.15 } }).addTo(planLayer));
    plan.map.manholes.forEach((m) => L.geoJSON(m.geometry, { pointToLayer: (f, ll) => L.circleMarker(ll, {
      radius: 6, color: m.existing ? "#000" : "#1f78b4", weight: 2, fillColor: m.existing ? "#000" : "#fff", fillOpacity: 1 })
      .bindTooltip(() => el("span", `${m.id}: ${m.reason}`)) }).addTo(planLayer));
    if (!output) return;
    output.replaceChildren();
    const list = el("ul", null, "plan-summary");
    const add = (text, cls) => list.append(el("li", text, cls));
    const newManholes = plan.manholes.filter((m) => !m.existing).length;
    add(`${plan.name ? plan.name + ": " : ""}${Math.round(plan.length_ft).toLocaleString()} ft of ${plan.diameter_in}-inch` +
        `${plan.material ? " " + plan.material : ""} main, ${newManholes} new manholes` +
        (plan.connecting_main ? ` (with a ${Math.round(plan.connecting_main.length_ft)} ft connecting main to ${plan.connecting_main.to_manhole})` : ""));
    const unknown = (plan.flow && plan.flow.units_unknown.length) || 0;
    add(`Newly required to connect: ${plan.newly_mandated.length} parcels (${plan.units} living units` +
        `${unknown ? `; units unknown for ${unknown}` : ""}); ${plan.private_systems.length} septic systems retired` +
        `${(plan.vacant_benefiting || []).length ? `; ${plan.vacant_benefiting.length} vacant lots benefit` : ""}` +
        `${plan.held_by_service_area.length ? `; ${plan.held_by_service_area.length} outside every service area` : ""}`);
    if (plan.petition.applies) add(`Petition (${plan.petition.section}): ${plan.petition.signatures_needed} of ` +
                                   `${plan.petition.benefiting_owners} benefiting owners make a majority`);
    add(`Estimated cost $${plan.cost.total.toLocaleString(undefined, { minimumFractionDigits: 2 })}` +
        (plan.units ? `, $${Math.round(plan.cost.total / plan.units).toLocaleString()} per newly connected living unit` : ""));
    plan.design_checks.forEach((c) => add(`${c.check.replace(/_/g, " ")}: ${c.verdict} (${c.section}). ${c.message}`,
                                          `verdict ${c.verdict.replace(/ /g, "-")}`));
    (plan.requirements || []).forEach((r) => add(`Requirement, ${r.requirement.replace(/_/g, " ")} (${r.section}): ${r.text}`,
                                                 "requirement"));
    (plan.test_sections || []).forEach((s) => add(`Test section ${s.number}: ${s.from_manhole} to ${s.to_manhole}, ` +
      `${s.length_ft.toLocaleString()} ft, leakage at most ${s.allowance_gpd} gallons per day`, "test-section"));
    output.append(list);
    output.dataset.newlyMandated = String(plan.newly_mandated.length);
  }

  const runForm = document.getElementById("run-form");
  if (runForm) {
    runForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      const status = document.getElementById("job");
      status.textContent = "Starting…";
      const response = await fetch(runForm.action, { method: "POST", body: new FormData(runForm),
                                                     credentials: "same-origin", headers: { "X-CSRF-Token": cfg.csrf } });
      let job = await response.json();
      if (!response.ok) { status.textContent = job.error ? job.error.message : "Could not start."; return; }
      while (job.state === "queued" || job.state === "running") {
        status.textContent = `Running: ${job.step || "starting"}…`;
        await new Promise((r) => setTimeout(r, 700));
        job = await (await fetch(`/api/jobs/${job.id}`, { credentials: "same-origin" })).json();
      }
      if (job.state === "done") { status.textContent = "Done: reloading the map."; window.location.reload(); }
      else status.textContent = `Failed: ${job.error}`;
    });
  }
})();
