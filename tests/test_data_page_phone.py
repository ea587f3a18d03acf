"""The Data page on a phone (375 x 700 px), in Chromium: its workspaces table squeezed the "Work on it" button to one
letter a line (W / o / r / k ...), as the table cells may break a word anywhere (a 2,000,000-character owner name must
wrap) and their buttons took that from them. On a phone each upload is stacked, its buttons side by side below it."""

from __future__ import annotations

import pytest

from tests.conftest import checked_upload, make_app, serving
from tests.test_web import wait_for

# Each button of the workspaces table: the lines its words take (the line boxes of its text), its rendered height and
# the most two lines of its text take with its padding (a phone's buttons are at least 44 px tall, a finger's target).
BUTTON_LINES = """
return [...document.querySelectorAll('#workspaces button')].map((b) => {
  const style = getComputedStyle(b);
  const line = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.25;
  const pad = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom)
    + parseFloat(style.borderTopWidth) + parseFloat(style.borderBottomWidth);
  const words = document.createRange();
  words.selectNodeContents(b);
  const tops = new Set([...words.getClientRects()].map((r) => Math.round(r.top)));
  const box = b.getBoundingClientRect();
  return {text: b.textContent.trim(), lines: tops.size, height: box.height,
          two_lines: Math.max(parseFloat(style.minHeight) || 0, 2 * line + pad), right: box.right};
});
"""


@pytest.mark.browser
def test_the_workspaces_buttons_stay_readable_on_a_phone(tmp_path, browser):
    from selenium.webdriver.common.by import By

    store = tmp_path / "town" / "town.gpkg"
    store.parent.mkdir()
    app = make_app(store, tmp_path)
    checked_upload(app.test_client(), tmp_path, parcels=60)  # validated: "Work on it" and "Publish ..." are offered
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 375, "height": 700, "deviceScaleFactor": 2, "mobile": True}
    )
    with serving(app) as url:
        browser.get(url + "/data/upload")
        wait_for(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "#workspaces button"))
        assert browser.execute_script("return window.innerWidth") == 375
        buttons = browser.execute_script(BUTTON_LINES)
        width = browser.execute_script("return document.documentElement.clientWidth")
    shown = {b["text"]: b for b in buttons}
    assert {"Work on it", "Publish as the town's store", "Discard"} <= set(shown), buttons
    for b in buttons:  # two lines at most (the publish button's words may wrap once), on the screen
        assert b["lines"] <= 2 and b["height"] <= b["two_lines"] + 0.5, b
        assert b["right"] <= width, b
    assert shown["Work on it"]["lines"] == 1 and shown["Discard"]["lines"] == 1, buttons
