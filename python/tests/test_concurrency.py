# SPDX-License-Identifier: Apache-2.0
# Many calls at once: from threads (the GIL is released while waiting) and
# from one asyncio loop (no thread per call).
import asyncio
import threading
import time

import pmon

from conftest import our_zombies


def test_200_threads_at_once():
    results = [None] * 200
    errors = []
    barrier = threading.Barrier(200)

    def one(i):
        try:
            barrier.wait()
            results[i] = pmon.run(["sh", "-c", f"echo {i}; sleep 0.2 & exit {i % 7}"], capture_output=True)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for i, r in enumerate(results):
        assert r.returncode == i % 7 and r.stdout == f"{i}\n".encode()
        assert r.cleanup_verified
    assert our_zombies() == []


def test_gil_released_while_waiting():
    ticks = 0
    stop = False

    def spin():
        nonlocal ticks
        while not stop:
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=spin)
    t.start()
    pmon.run(["sleep", "0.5"])
    stop = True
    t.join()
    assert ticks > 50  # the other thread ran during the call


def test_200_asyncio_calls_at_once():
    async def main():
        return await asyncio.gather(*[
            pmon.run_async(["sh", "-c", f"echo {i}; exit {i % 5}"], capture_output=True) for i in range(200)])

    before = threading.active_count()
    results = asyncio.run(main())
    for i, r in enumerate(results):
        assert r.returncode == i % 5 and r.stdout == f"{i}\n".encode()
    assert threading.active_count() == before  # no thread was needed
    assert our_zombies() == []
