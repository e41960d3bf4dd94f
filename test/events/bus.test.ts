import { describe, expect, it } from 'vitest';
import { createLocalEventBus } from '../../src/events/bus.js';
import type { LiveEvent } from '../../src/events/types.js';

const event = (seq: number): LiveEvent => ({ seq, json: JSON.stringify({ type: 'log', data: { seq } }) });

describe('the local event bus', () => {
  it("hands a run's events to that run's listeners only, in order, until each closes", () => {
    const bus = createLocalEventBus();
    const first: number[] = [];
    const second: number[] = [];
    const other: number[] = [];
    const one = bus.subscribe('run_a', (e) => first.push(e.seq));
    const two = bus.subscribe('run_a', (e) => second.push(e.seq));
    bus.subscribe('run_b', (e) => other.push(e.seq));
    expect(bus.listenerCount('run_a')).toBe(2);

    bus.publish('run_a', event(1));
    bus.publish('run_a', event(2));
    one?.close();
    bus.publish('run_a', event(3));
    two?.close();
    bus.publish('run_a', event(4));

    expect(first).toEqual([1, 2]);
    expect(second).toEqual([1, 2, 3]);
    expect(other).toEqual([]);
    expect(bus.listenerCount('run_a')).toBe(0);
    // A closed subscription closed again changes nothing.
    one?.close();
    expect(bus.listenerCount('run_b')).toBe(1);
  });

  it('knows nothing of the run itself: a subscription has no live state, and publishing with no one listening is fine', () => {
    const bus = createLocalEventBus();
    const subscription = bus.subscribe('run_a', () => {});
    expect(subscription?.live).toBeNull();
    expect(() => bus.publish('run_nobody', event(1))).not.toThrow();
  });

  it('still hands an event to the other listeners when one throws', () => {
    const bus = createLocalEventBus();
    const heard: string[] = [];
    bus.subscribe('run_a', () => {
      heard.push('broken');
      throw new Error('a broken stream');
    });
    bus.subscribe('run_a', (e) => heard.push(`whole ${e.seq}`));
    expect(() => bus.publish('run_a', event(1))).not.toThrow();
    expect(heard).toEqual(['broken', 'whole 1']);
  });
});
