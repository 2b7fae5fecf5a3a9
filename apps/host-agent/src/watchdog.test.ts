import { describe, expect, it } from "vitest";
import { Watchdog } from "./watchdog.ts";

function fakeClock(start = 1_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

describe("Watchdog", () => {
  it("expires once the last success is older than the TTL, exactly once", () => {
    const clock = fakeClock();
    let expired = 0;
    const dog = new Watchdog({ ttlMs: 30_000, now: clock.now, onExpire: () => expired++ });
    clock.advance(29_999);
    expect(dog.check()).toBe(false);
    expect(dog.remainingMs()).toBe(1);
    clock.advance(1);
    expect(dog.check()).toBe(true);
    clock.advance(60_000);
    expect(dog.check()).toBe(true);
    expect(expired).toBe(1);
  });

  it("counts from the claim when told so, not from construction", () => {
    const clock = fakeClock(50_000);
    let expired = false;
    const dog = new Watchdog({ ttlMs: 10_000, now: clock.now, aliveSince: 45_000, onExpire: () => (expired = true) });
    clock.advance(4_999);
    expect(dog.check()).toBe(false);
    clock.advance(1);
    expect(dog.check()).toBe(true);
    expect(expired).toBe(true);
  });

  it("is kept alive by successful heartbeats, measured from when they were sent", () => {
    const clock = fakeClock(0);
    let expired = false;
    const dog = new Watchdog({ ttlMs: 10_000, now: clock.now, onExpire: () => (expired = true) });
    clock.advance(8_000);
    const sentAt = clock.now();
    clock.advance(1_500); // the heartbeat's answer arrives 1.5 s later
    dog.feed(sentAt);
    clock.advance(8_499);
    expect(dog.check()).toBe(false);
    clock.advance(1);
    expect(dog.check()).toBe(true); // 10 s after the *send*, not after the answer
    expect(expired).toBe(true);
  });

  it("ignores an out-of-order older success", () => {
    const clock = fakeClock(0);
    const dog = new Watchdog({ ttlMs: 10_000, now: clock.now, onExpire: () => undefined });
    clock.advance(5_000);
    dog.feed(5_000);
    dog.feed(1_000); // a slower, earlier heartbeat answering late must not pull the deadline back
    expect(dog.remainingMs()).toBe(10_000);
  });

  it("never fires after stop(), and a fed stopped watchdog stays quiet", () => {
    const clock = fakeClock(0);
    let expired = false;
    const dog = new Watchdog({ ttlMs: 1_000, now: clock.now, onExpire: () => (expired = true) });
    dog.stop();
    clock.advance(5_000);
    expect(dog.check()).toBe(false);
    expect(expired).toBe(false);
  });

  it("checks on its own timer once started", async () => {
    const clock = fakeClock(0);
    let expired = false;
    const dog = new Watchdog({ ttlMs: 1_000, now: clock.now, checkEveryMs: 5, onExpire: () => (expired = true) });
    dog.start();
    await new Promise((r) => setTimeout(r, 30));
    expect(expired).toBe(false);
    clock.advance(1_000);
    await new Promise((r) => setTimeout(r, 30));
    expect(expired).toBe(true);
    dog.stop();
  });
});
