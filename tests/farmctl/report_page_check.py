#!/usr/bin/env python3
"""Checks a `farmctl report` page as a browser renders it.

Opens the HTML file in headless Chromium (Debian's package), driven over the DevTools
protocol on a pipe (--remote-debugging-pipe: JSON messages ended by a NUL byte on fds
3 and 4), takes a screenshot of the whole page and checks, for every chart the page
declares (<figure class="chart" data-points=N>):
  - it is laid out with a size and holds an SVG with N points in its polylines;
  - in the screenshot, its box holds pixels of each of its series' colours (the chart
    is drawn, and drawn with data), and is not blank. A series whose every point lies
    on series drawn after it is hidden by them and is not looked for.
Each id given with --expect must be among the charts, with data. The screenshot is
written to --screenshot when given. Exit 0: every check passed; 1: a check failed;
77: Chromium is not installed (the caller reports the test as skipped).

Usage: report_page_check.py REPORT.html [--expect ID]... [--screenshot FILE.png]
"""
import argparse
import base64
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

WIDTH = 1200

# The charts as the page lays them out: id, box, points declared and drawn, and the
# stroke colours of the series that have points not all hidden under later series.
FIGURES_JS = """
JSON.stringify(Array.from(document.querySelectorAll('figure.chart')).map(f => {
  const r = f.getBoundingClientRect();
  const lines = Array.from(f.querySelectorAll('polyline'));
  return {
    id: f.id,
    x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height,
    declared: Number(f.dataset.points),
    drawn: lines.reduce((n, l) => n + l.points.numberOfItems, 0),
    colours: Array.from(new Set(lines.filter((l, i) => {
      const later = new Set(lines.slice(i + 1).flatMap(
          m => m.getAttribute('points').trim().split(/\s+/)));
      return !l.getAttribute('points').trim().split(/\s+/).every(p => later.has(p));
    }).map(l => l.getAttribute('stroke')))),
    svg: f.querySelectorAll('svg').length,
  };
}))
"""


class DevTools:
    """One Chromium with the DevTools protocol on a pipe."""

    def __init__(self, chromium):
        self.profile = tempfile.mkdtemp(prefix="report-page-")
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def wire():  # in the child: the pipe ends on fds 3 and 4, whatever they were
            read_end, write_end = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--hide-scrollbars", "--user-data-dir=" + self.profile,
             "--remote-debugging-pipe", "about:blank"],
            preexec_fn=wire, pass_fds=(3, 4),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.next_id = 0
        self.buffer = b""
        self.events = []

    def close(self):
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, session=None, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read_message()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_event(self, method):
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read_message())


def decode_png(data):
    """An 8-bit RGB or RGBA PNG as (width, height, rows of RGB tuples)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    at, idat = 8, b""
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            if depth != 8 or colour not in (2, 6):
                raise ValueError(f"PNG depth {depth} colour type {colour} not handled")
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            up_left = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else up_left)
                line[i] = (line[i] + pred) & 0xFF
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, channels)])
        previous = line
    return width, height, rows


def hex_colour(text):
    text = text.lstrip("#")
    return tuple(int(text[i:i + 2], 16) for i in (0, 2, 4))


def near(a, b, tolerance=40):
    return all(abs(x - y) <= tolerance for x, y in zip(a, b))


def check(figures, rows, expected):
    problems = []
    ids = {f["id"] for f in figures}
    if not figures:
        problems.append("the page has no chart")
    for want in expected:
        if want not in ids:
            problems.append(f"chart {want} is missing (charts: {sorted(ids)})")
    for f in figures:
        name = f["id"]
        if f["svg"] != 1 or f["width"] < 100 or f["height"] < 100:
            problems.append(f"{name}: not laid out as one SVG chart ({f})")
            continue
        if f["drawn"] != f["declared"]:
            problems.append(f"{name}: declares {f['declared']} points, draws {f['drawn']}")
        if name in expected and f["drawn"] == 0:
            problems.append(f"{name}: has no data")
        x0, y0 = int(f["x"]), int(f["y"])
        box = [row[x0:x0 + int(f["width"])] for row in rows[y0:y0 + int(f["height"])]]
        pixels = [p for row in box for p in row]
        if len(pixels) < 100 * 100:
            problems.append(f"{name}: its box is outside the screenshot")
            continue
        if sum(1 for p in pixels if p != (255, 255, 255)) < 500:
            problems.append(f"{name}: blank in the screenshot")
        for colour in f["colours"]:
            rgb = hex_colour(colour)
            count = sum(1 for p in pixels if near(p, rgb))
            # The legend's sample line alone is about 24 x 2 pixels: a drawn series
            # adds its line inside the plot.
            if count < 60:
                problems.append(f"{name}: series colour {colour} shows on {count} pixels only")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--expect", action="append", default=[])
    parser.add_argument("--screenshot")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("report_page_check: chromium is not installed (ops/setup.sh installs it)",
              file=sys.stderr)
        return 77
    browser = DevTools(chromium)
    try:
        target = next(t for t in browser.call("Target.getTargets")["targetInfos"]
                      if t["type"] == "page")
        session = browser.call("Target.attachToTarget", targetId=target["targetId"],
                               flatten=True)["sessionId"]
        browser.call("Page.enable", session)
        browser.call("Emulation.setDeviceMetricsOverride", session, width=WIDTH, height=900,
                     deviceScaleFactor=1, mobile=False)
        browser.call("Page.navigate", session, url="file://" + os.path.abspath(args.report))
        browser.wait_event("Page.loadEventFired")
        figures = json.loads(browser.call("Runtime.evaluate", session, expression=FIGURES_JS,
                                          returnByValue=True)["result"]["value"])
        size = browser.call("Page.getLayoutMetrics", session)["cssContentSize"]
        shot = browser.call("Page.captureScreenshot", session, format="png",
                            captureBeyondViewport=True,
                            clip={"x": 0, "y": 0, "width": WIDTH,
                                  "height": int(size["height"]), "scale": 1})
    finally:
        browser.close()
    png = base64.b64decode(shot["data"])
    if args.screenshot:
        with open(args.screenshot, "wb") as out:
            out.write(png)
    width, height, rows = decode_png(png)
    problems = check(figures, rows, args.expect)
    for f in figures:
        print(f"chart {f['id']}: {f['drawn']} points, {len(f['colours'])} series, "
              f"{int(f['width'])}x{int(f['height'])} at y={int(f['y'])}")
    print(f"page {width}x{height}: {len(figures)} charts, {len(problems)} problems")
    for problem in problems:
        print("problem: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
