"""The screenshots in docs/table.md, taken in headless Chromium (run by hand, about a minute):

    .venv/bin/python -m tests.table.screenshots docs

Two people (seats 2 and 5, clicking as tests/table/test_browser.py does) and four rule bots play that test's
game (6 players, seed 6: seat 2 the Assassin). Taken: seat 2's page at the start of quest 3 with its request open
(table-seat.png), the same seat at phone width (table-phone.png, 390 px), the spectator's page
(table-spectator.png), and, once the game is over, the replay through the end's link (table-replay.png). Each is
saved as a PNG of 256 colours (Pillow) to keep docs/ small.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from tests.browser import chromium
from tests.table.test_browser import SEATS, act, start_table

SPEECHES = ['I am "good", and I read Player 1 as good too.', "Player 4's votes worry me.",
            "Same team as last time, please.", "I approve: it worked before."]


def shoot(driver, path: Path) -> None:
    """A PNG of the whole page (the window grown to the page's height), in 256 colours."""
    from PIL import Image

    height = driver.execute_script("return document.documentElement.scrollHeight")
    width = driver.get_window_size()["width"]
    driver.set_window_size(width, min(height + 120, 2400))
    time.sleep(0.3)
    driver.save_screenshot(str(path))
    Image.open(path).convert("RGB").quantize(256).save(path, optimize=True)
    print(f"{path}: {path.stat().st_size // 1024} KB")


def main(folder: Path) -> None:
    from selenium.webdriver.common.by import By

    folder.mkdir(parents=True, exist_ok=True)
    drivers = [chromium(1200, 1000) for _ in SEATS]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            addresses, _ = start_table(Path(tmp) / "table")
            for seat, driver in zip(SEATS, drivers):
                driver.get(addresses[seat])
            speeches = {SEATS[0]: list(SPEECHES), SEATS[1]: list(SPEECHES)}
            seat, shot = drivers[0], False
            deadline = time.monotonic() + 600
            while not all(d.find_element(By.TAG_NAME, "body").get_attribute("data-over") == "yes" for d in drivers):
                if time.monotonic() > deadline:
                    raise SystemExit("the game did not end in 10 minutes")
                if not shot and seat.find_elements(By.CSS_SELECTOR, "#quests li.current[data-quest='3']") \
                        and seat.find_element(By.ID, "request").is_displayed():
                    shoot(seat, folder / "table-seat.png")
                    seat.set_window_size(390, 844)
                    shoot(seat, folder / "table-phone.png")
                    seat.set_window_size(1200, 1000)
                    drivers[1].get(addresses["watch"])
                    time.sleep(1.0)
                    shoot(drivers[1], folder / "table-spectator.png")
                    drivers[1].get(addresses[SEATS[1]])
                    time.sleep(1.0)
                    shot = True
                for n, driver in zip(SEATS, drivers):
                    if act(driver, speeches[n]):
                        time.sleep(0.3)
                time.sleep(0.1)
            seat.find_element(By.ID, "replay-link").click()
            seat.switch_to.window(seat.window_handles[-1])
            time.sleep(1.0)
            shoot(seat, folder / "table-replay.png")
    finally:
        for d in drivers:
            d.quit()


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs"))
