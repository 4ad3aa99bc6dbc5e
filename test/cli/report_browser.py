#!/usr/bin/env python3
"""Opens an HTML file in headless Chromium and reports what a user would see.

Used by test/cli/report_html_test.sh for `scout report --html`. Drives Debian's chromium through
the DevTools protocol over a pipe (--remote-debugging-pipe: commands on fd 3, replies and events
on fd 4, each a JSON text ending in a NUL byte), with the standard library only.

    report_browser.py PAGE OUTDIR [NAME=CSS-SELECTOR ...]

Loads file://PAGE in a 1280-pixel-wide window, waits for the load event, then writes to OUTDIR:
  result.json  {"ready": the page's data-ready attribute, "script_errors": its
               data-script-errors attribute, "error_log": the text of #script-errors,
               "exceptions": uncaught script exceptions, "console_errors": console and log
               entries of level error, "requests": every URL the page asked for other than itself,
               "title": document.title, "shots": {NAME: file}}
  text.txt     document.body.innerText (the rendered text)
  page.png     the whole page
  NAME.png     the element SELECTOR selects, for each NAME=SELECTOR
  NAME.txt     its rendered text (innerText), then the text of its SVG pictures, one per line
Exit status 0 when the browser ran (the caller judges result.json), 2 on bad arguments, 3 when
the browser failed.
"""
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
    "--remote-debugging-pipe",
]


class Browser:
    def __init__(self, binary, profile):
        a_read, a_write = os.pipe()  # we write commands, chromium reads fd 3
        b_read, b_write = os.pipe()  # chromium writes fd 4, we read

        # The shell puts our two ends on fds 3 and 4 and closes the originals (moved above 9
        # first, so that neither is 3 or 4 itself).
        for name in ("a_read", "b_write"):
            fd = locals()[name]
            high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
            os.close(fd)
            if name == "a_read":
                a_read = high
            else:
                b_write = high
        shell = 'exec "$@" 3<&{r} 4>&{w} {r}<&- {w}>&-'.format(r=a_read, w=b_write)
        self.proc = subprocess.Popen(
            ["bash", "-c", shell, "bash", binary] + CHROMIUM_FLAGS + ["--user-data-dir=" + profile, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            pass_fds=(a_read, b_write))
        os.close(a_read)
        os.close(b_write)
        self.out = os.fdopen(a_write, "wb", buffering=0)
        self.inp = os.fdopen(b_read, "rb", buffering=0)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            if time.time() > deadline:
                raise TimeoutError("no answer from the browser")
            chunk = self.inp.read(65536)
            if not chunk:
                raise RuntimeError("the browser closed its pipe: " + self.stderr_tail())
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def stderr_tail(self):
        try:
            self.proc.kill()
            return self.proc.stderr.read().decode(errors="replace")[-2000:]
        except Exception:  # pylint: disable=broad-except
            return ""

    def call(self, method, params=None, session=None, timeout=60):
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.out.write(json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == mid:
                if "error" in m:
                    raise RuntimeError(method + ": " + json.dumps(m["error"]))
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def wait_event(self, method, session, timeout=60):
        deadline = time.time() + timeout
        for i, e in enumerate(self.events):
            if e["method"] == method and e.get("sessionId") == session:
                return self.events.pop(i)
        while True:
            m = self._read_message(deadline)
            if "method" in m:
                if m["method"] == method and m.get("sessionId") == session:
                    return m
                self.events.append(m)

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except Exception:  # pylint: disable=broad-except
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    page, outdir = os.path.abspath(argv[1]), argv[2]
    shots = []
    for a in argv[3:]:
        if "=" not in a:
            print("report_browser: expected NAME=SELECTOR, got " + a, file=sys.stderr)
            return 2
        shots.append(tuple(a.split("=", 1)))
    binary = os.environ.get("CHROMIUM", "") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not binary:
        print("report_browser: no chromium on PATH", file=sys.stderr)
        return 3
    os.makedirs(outdir, exist_ok=True)
    url = "file://" + page
    profile = tempfile.mkdtemp(prefix="scout-chromium-")
    b = Browser(binary, profile)
    result = {"url": url, "exceptions": [], "console_errors": [], "requests": [], "shots": {}}
    try:
        target = b.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = b.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            b.call(domain + ".enable", session=s)
        b.call("Emulation.setDeviceMetricsOverride",
               {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session=s)
        b.call("Page.navigate", {"url": url}, session=s)
        b.wait_event("Page.loadEventFired", s)
        time.sleep(0.3)  # late console messages, if any

        def js(expr):
            r = b.call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=s)
            if "exceptionDetails" in r:
                raise RuntimeError("evaluating " + expr + ": " + json.dumps(r["exceptionDetails"]))
            return r["result"].get("value")

        state = js("JSON.stringify({ready: document.documentElement.getAttribute('data-ready'),"
                   " errors: document.documentElement.getAttribute('data-script-errors'),"
                   " log: (document.getElementById('script-errors') || {}).textContent || '',"
                   " title: document.title, text: document.body ? document.body.innerText : ''})")
        state = json.loads(state)
        result.update({"ready": state["ready"], "script_errors": state["errors"],
                       "error_log": state["log"], "title": state["title"]})
        with open(os.path.join(outdir, "text.txt"), "w", encoding="utf-8") as f:
            f.write(state["text"])

        metrics = b.call("Page.getLayoutMetrics", session=s)
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        png = b.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": {
            "x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}}, session=s)["data"]
        with open(os.path.join(outdir, "page.png"), "wb") as f:
            f.write(__import__("base64").b64decode(png))
        for name, selector in shots:
            rect = js("(function(){var e=document.querySelector(" + json.dumps(selector) + ");"
                      "if(!e)return null;var r=e.getBoundingClientRect();"
                      "return {x:r.left+window.scrollX,y:r.top+window.scrollY,w:r.width,h:r.height,"
                      "text:e.innerText,svg:Array.prototype.map.call(e.querySelectorAll('svg text'),"
                      "function(t){return t.textContent;}).join('\\n')};})()")
            if not rect:
                result["shots"][name] = None
                continue
            with open(os.path.join(outdir, name + ".txt"), "w", encoding="utf-8") as f:
                f.write(rect["text"] + "\n" + rect["svg"] + "\n")
            pad = 8
            clip = {"x": max(0, rect["x"] - pad), "y": max(0, rect["y"] - pad),
                    "width": rect["w"] + 2 * pad, "height": rect["h"] + 2 * pad, "scale": 1}
            png = b.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                     "clip": clip}, session=s)["data"]
            path = os.path.join(outdir, name + ".png")
            with open(path, "wb") as f:
                f.write(__import__("base64").b64decode(png))
            result["shots"][name] = path

        for e in b.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                result["exceptions"].append(d.get("exception", {}).get("description") or d.get("text", ""))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                result["console_errors"].append(" ".join(str(a.get("value", a.get("description", "")))
                                                         for a in p.get("args", [])))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                result["console_errors"].append(p["entry"].get("text", ""))
            elif m == "Network.requestWillBeSent":
                u = p.get("request", {}).get("url", "")
                if u != url:
                    result["requests"].append(u)
    except Exception as ex:  # pylint: disable=broad-except
        print("report_browser: " + str(ex), file=sys.stderr)
        b.close()
        shutil.rmtree(profile, ignore_errors=True)
        return 3
    b.close()
    shutil.rmtree(profile, ignore_errors=True)
    with open(os.path.join(outdir, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
