"""The documentation site in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, which the test command's set-up, ``scripts/setup_browser.sh``, installs) driven by Selenium opens the home
page, the ``LlmService`` reference page and the capacity-planning guide, served over HTTP on
127.0.0.1, and checks that each renders its headings and highlighted code, that search finds
``LlmService`` from the index, and that no internal link (or its anchor) is broken.
Screenshots go to ``screenshots/`` (gitignored).

The site is conftest's ``site`` fixture: ``$CDK_SAGEMAKER_LLM_SITE`` when set (``scripts/test.sh``
builds it once with ``mkdocs build --strict`` and passes it on), else built once per session.
"""

from __future__ import annotations

import functools
import html.parser
import os
import shutil
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import PROJECT_ROOT

SCREENSHOTS = PROJECT_ROOT / "screenshots"
PAGES = {
    "home": ("", "cdk-sagemaker-llm", ["Quick start", "Guides"]),
    "llm-service": ("reference/llm-service/", "LlmService", ["LlmService"]),
    "capacity-planning": ("guides/capacity-planning/", "Capacity planning", ["SLO-driven service"]),
}
"""Each page checked: its path in the site, the text of its title (h1) and of some of its
section headings (h2 or h3)."""
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
DRIVERS = ("chromedriver",)


def _find(names: tuple[str, ...]) -> str | None:
    return next((path for name in names if (path := shutil.which(name))), None)


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    """The site over HTTP on loopback (search fetches its index, which file:// forbids)."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium, driver = _find(BROWSERS), _find(DRIVERS)
    if chromium is None or driver is None:
        missing = "chromium" if chromium is None else "chromedriver"
        if os.environ.get("CI") and os.geteuid() == 0 and shutil.which("apt-get"):
            pytest.fail(f"{missing} is missing but installable: run scripts/setup_browser.sh")
        if os.geteuid() == 0 and shutil.which("apt-get"):
            pytest.skip(
                f"{missing} is not installed: `bash scripts/setup_browser.sh` installs it "
                "(scripts/test.sh runs it; synth never does)"
            )
        pytest.skip(
            f"{missing} is not installed and cannot be (not root, or no apt-get): "
            "install Debian's chromium and chromium-driver to run the browser test"
        )
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must not try to download a browser
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1280,1000",
                     "--no-first-run", "--disable-extensions"):  # fmt: skip
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "SEVERE"})
    chrome = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    chrome.set_page_load_timeout(120)
    try:
        yield chrome
    finally:
        chrome.quit()


class _Anchors(html.parser.HTMLParser):
    """The ids and names a page defines, as link fragments can target them."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)


@functools.cache
def _fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, ""


def _broken_links(base: str, hrefs: list[str]) -> list[str]:
    broken = []
    for href in sorted(set(hrefs)):
        if not href.startswith(base):
            continue  # another site: not checked (no network)
        target, _, fragment = href.partition("#")
        status, text = _fetch(target)
        if status != 200:
            broken.append(f"{href} (HTTP {status})")
        elif fragment and (target.endswith("/") or target.endswith(".html")):
            parser = _Anchors()
            parser.feed(text)
            if urllib.parse.unquote(fragment) not in parser.ids:
                broken.append(f"{href} (no anchor #{fragment})")
    return broken


@pytest.mark.parametrize("page", list(PAGES))
def test_page_renders_with_headings_code_and_working_links(
    page: str, browser: Any, server: str
) -> None:
    from selenium.webdriver.common.by import By

    path, title, sections = PAGES[page]
    browser.get(server + path)
    SCREENSHOTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / f"{page}.png"))

    assert title in browser.find_element(By.CSS_SELECTOR, "article h1").text
    headings = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "article h2, article h3")]
    for section in sections:
        assert any(text.startswith(section) for text in headings), (section, headings)
    # Pygments' token spans inside rendered code blocks: the code is highlighted.
    tokens = browser.find_elements(By.CSS_SELECTOR, "article .highlight code span[class]")
    assert len(tokens) >= 10, f"{page}: no highlighted code"
    assert browser.execute_script("return document.styleSheets.length") >= 2  # theme CSS

    hrefs = [
        a.get_attribute("href") or "" for a in browser.find_elements(By.CSS_SELECTOR, "a[href]")
    ]
    assert len(hrefs) >= 20  # navigation, table of contents, content
    assert _broken_links(server, hrefs) == []
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == [], errors


def test_search_finds_the_llm_service_reference(browser: Any, server: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    status, index = _fetch(server + "search/search_index.json")
    assert status == 200 and "LlmService" in index
    browser.get(server)
    box = WebDriverWait(browser, 30).until(
        expected_conditions.element_to_be_clickable((By.CSS_SELECTOR, "input.md-search__input"))
    )
    box.send_keys("LlmService")
    results = WebDriverWait(browser, 60).until(
        lambda driver: driver.find_elements(By.CSS_SELECTOR, ".md-search-result__item a")
    )
    browser.save_screenshot(str(SCREENSHOTS / "search.png"))
    targets = [result.get_attribute("href") or "" for result in results]
    assert any("reference/llm-service/" in target for target in targets), targets
