"""Headless Chromium driven by Selenium against the real site on a real socket (pytest-django's
live server, which serves the same WSGI application and static files).

Needs Debian's `chromium` and `chromium-driver` (`make test` installs them when it runs as root
on Debian) and selenium; without them every browser test is skipped with the reason.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from access.models import Grant
from knowledge.bases import kb_get

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
PASSWORD = "a long browser password 1"
DESKTOP = (1280, 900)
NARROW = (390, 844)
CHROMIUM_NARROWEST = 500  # px: the narrowest window headless Chromium makes
WAIT_SECONDS = 30


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -r requirements-test.txt)"
    if CHROMIUM is None or CHROMEDRIVER is None:
        return ("headless Chromium is not installed: `apt-get install chromium chromium-driver` "
                "(make test does it when it runs as root on Debian)")
    return None


MISSING = _missing()


def pytest_collection_modifyitems(config, items):
    if MISSING is None:
        return
    skip = pytest.mark.skip(reason=f"browser tests skipped: {MISSING}")
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(skip)


def chrome(size: tuple[int, int] = DESKTOP, *, lang: str = "en-US"):
    """A fresh headless Chromium with an empty profile and no background connections (this
    machine's network is closed), asking for pages in `lang` (its Accept-Language)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="lr-chromium-")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-quic", "--no-first-run",
                 "--disable-default-apps", "--disable-extensions", f"--user-data-dir={profile}",
                 f"--window-size={size[0]},{size[1]}", f"--lang={lang}"):
        options.add_argument(flag)
    options.add_experimental_option("prefs", {"intl.accept_languages": lang})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    if size[0] < CHROMIUM_NARROWEST:
        # Headless Chromium makes no window narrower than 500 px: a phone's screen is emulated
        # (its viewport meta tag honoured, as a phone does), so 390 px is really 390 px.
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": True})
    driver.set_page_load_timeout(WAIT_SECONDS)
    driver._profile_dir = profile
    return driver


@pytest.fixture
def browser(live_server, clean_tables):
    driver = chrome()
    driver.base_url = live_server.url
    yield driver
    driver.quit()
    shutil.rmtree(driver._profile_dir, ignore_errors=True)


@pytest.fixture
def account(clean_tables):
    """account(username, grants={"default": "maintainer"}, superuser=False) -> the user."""

    def make(username: str, *, grants: dict[str, str] | None = None, superuser: bool = False):
        users = get_user_model().objects
        if superuser:
            return users.create_superuser(username=username, password=PASSWORD)
        user = users.create_user(username=username, password=PASSWORD)
        for slug, role in (grants or {}).items():
            Grant.objects.create(user=user, knowledge_base_id=kb_get(slug).id, role=role)
        return user

    return make


def wait(driver, condition, seconds: float = WAIT_SECONDS):
    """Wait for `condition`; an element found while the page is being replaced (a navigation
    under way) goes stale before it is read, and is looked for again."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds, ignored_exceptions=(
        NoSuchElementException, StaleElementReferenceException)).until(condition)


def css(selector: str):
    from selenium.webdriver.common.by import By

    return (By.CSS_SELECTOR, selector)


def sign_in(driver, username: str) -> None:
    from selenium.webdriver.support import expected_conditions as EC

    driver.get(f"{driver.base_url}/workbench/login/")
    driver.find_element(*css("input[name=username]")).send_keys(username)
    driver.find_element(*css("input[name=password]")).send_keys(PASSWORD)
    driver.find_element(*css("form.stack button[type=submit]")).click()
    wait(driver, EC.url_contains("/workbench/ask/"))


def ingest(folder: Path) -> None:
    from core.config import get_config
    from knowledge.ingest import IngestRequest, vault_ingest

    result = vault_ingest(IngestRequest(vault_path=folder, prepare_workers=0), config=get_config())
    assert result.status == "success", result


def screenshot_dir() -> Path | None:
    """Where the screenshot test writes (LOCALRAG_SCREENSHOTS), or None: it is skipped."""
    import os

    value = os.environ.get("LOCALRAG_SCREENSHOTS")
    return Path(value) if value else None


SCREENSHOT_MAX_HEIGHT = 2400


def screenshot_save(driver, path: Path, *, size: tuple[int, int]) -> None:
    """The whole page (up to SCREENSHOT_MAX_HEIGHT), as a palette PNG to keep the repository
    small."""
    from PIL import Image

    width = size[0]
    # Back to the base size first: a page is never shorter than the window it is measured in.
    driver.set_window_size(*size)
    height = driver.execute_script("return document.documentElement.scrollHeight;")
    chrome_extra = driver.execute_script("return window.outerHeight - window.innerHeight;")
    driver.set_window_size(width, min(SCREENSHOT_MAX_HEIGHT, height) + chrome_extra)
    driver.execute_script("window.scrollTo(0, 0);")
    driver.save_screenshot(str(path))
    with Image.open(path) as image:
        image.convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(
            path, optimize=True)
