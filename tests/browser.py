"""Debian's headless chromium driven through its chromedriver by selenium, for the tests of the pages (the
replay viewer, the web table). Without chromium the tests fail (they do not skip): install it with
`apt-get install -y chromium chromium-driver` (CI's .ci/run does)."""

from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def chromium(width: int = 1400, height: int = 1600):
    """A new headless browser logging its console; quit it when done."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).is_file()]
    if missing:
        pytest.fail(f"the browser tests need Debian's chromium and its driver ({', '.join(missing)} missing): "
                    "apt-get install -y chromium chromium-driver", pytrace=False)
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("the browser tests need selenium: pip install -e '.[dev]'", pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


def console_errors(driver) -> list[dict]:
    """What the page logged as an error or warning since the last call (a script error, a blocked load)."""
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


SERIOUS = ("serious", "critical")


def accessibility_problems(driver) -> list[str]:
    """axe-core's serious and critical violations on the page open in `driver` (the axe.min.js that the
    axe-core-python wheel ships, run in the page: nothing is downloaded), one line each: the rule's id, its help
    and the elements it found, by CSS selector."""
    try:
        from axe_core_python.selenium import Axe
    except ImportError:
        pytest.fail("the browser tests need axe-core-python: pip install -e '.[dev]'", pytrace=False)
    found = Axe().run(driver)
    return [f"{v['id']} ({v['impact']}: {v['help']}): " + ", ".join(" ".join(n["target"]) for n in v["nodes"])
            for v in found["violations"] if v["impact"] in SERIOUS]


def assert_accessible(driver) -> None:
    """No serious or critical accessibility violation (WCAG 2 A/AA and best practices, as axe-core checks them)."""
    problems = accessibility_problems(driver)
    assert not problems, "axe-core found on " + driver.current_url.split("?")[0] + ":\n" + "\n".join(problems)
