"""Runs a command on a pseudo-terminal and drives it like a user (for REPL and approval tests).

argv[1] is a JSON object: {"argv": [...], "env": {...}, "cwd": "...", "steps": [{"expect": REGEX} |
{"send": TEXT} | {"sleep": SECONDS}], "timeout": SECONDS}. Prints a JSON object:
{"transcript": everything the program wrote, "code": exit status or null, "failed": message or null}.
"""
import json, os, re, select, signal, subprocess, sys, time

spec = json.loads(sys.argv[1])
master, slave = os.openpty()
child = subprocess.Popen(spec["argv"], stdin=slave, stdout=slave, stderr=slave, env=spec["env"], cwd=spec.get("cwd"), start_new_session=True)
os.close(slave)
transcript = b""
failed = None
deadline_total = time.time() + spec.get("timeout", 30)


def pump(until):
    global transcript
    while time.time() < until:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                return False
            if not data:
                return False
            transcript += data
        elif child.poll() is not None:
            return False
    return True


position = 0
for step in spec["steps"]:
    if "send" in step:
        os.write(master, step["send"].encode())
    elif "sleep" in step:
        pump(time.time() + step["sleep"])
    elif "expect" in step:
        pattern = re.compile(step["expect"].encode(), re.S)
        while True:
            match = pattern.search(transcript, position)
            if match:
                position = match.end()
                break
            if time.time() > deadline_total:
                failed = "did not see %r in time" % step["expect"]
                break
            if not pump(time.time() + 0.2) and not pattern.search(transcript, position):
                failed = "the program ended before %r appeared" % step["expect"]
                break
        if failed:
            break

end = deadline_total
while child.poll() is None and time.time() < end:
    pump(time.time() + 0.1)
code = child.poll()
if code is None:
    os.killpg(child.pid, signal.SIGKILL)
    failed = failed or "still running at the end"
pump(time.time() + 0.1)
print(json.dumps({"transcript": transcript.decode("utf8", "replace"), "code": code, "failed": failed}))
