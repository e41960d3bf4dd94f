import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/**
 * Bars of one value per key (a day, a deployment, a model), drawn by uPlot on a canvas. The keys
 * are the x axis's labels; a key without the value (no price) draws no bar.
 */
export function UsageChart({
  label,
  keys,
  values,
  unit,
}: {
  label: string;
  keys: readonly string[];
  values: readonly (number | null)[];
  unit: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (!element || keys.length === 0) return;
    const bars = uPlot.paths.bars?.({ size: [0.6, 64] });
    const chart = new uPlot(
      {
        width: Math.max(320, element.clientWidth),
        height: 260,
        scales: { x: { time: false, range: [-0.5, keys.length - 0.5] } },
        axes: [
          {
            values: (_chart, ticks) => ticks.map((tick) => (Number.isInteger(tick) ? (keys[tick] ?? '') : '')),
            splits: () => keys.map((_key, index) => index),
          },
          { label: unit, size: 70 },
        ],
        series: [
          {},
          { label, fill: 'rgba(37, 99, 235, 0.55)', stroke: 'rgb(37, 99, 235)', paths: bars, points: { show: false } },
        ],
        legend: { show: false },
      },
      [keys.map((_key, index) => index), [...values]],
      element,
    );
    return () => chart.destroy();
  }, [keys, values, label, unit]);
  return <div ref={box} role="img" aria-label={`${label} by ${keys.join(', ')}`} className="usage-chart" />;
}
