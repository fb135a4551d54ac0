/**
 * Preloaded into the service by `npm run soak` (node --import scripts/soak-probe.ts): once a second
 * it sends the soak driver, over the IPC channel the driver opened, what only the process itself
 * can see: its heap and external memory and its active handles (sockets, timers, servers, files
 * being read). Without an IPC channel it does nothing. It changes nothing in the service.
 */
type Probe = { heapUsedMiB: number; heapTotalMiB: number; externalMiB: number; arrayBuffersMiB: number; activeResources: number; resourceKinds: Record<string, number> };

if (typeof process.send === 'function') {
  const MiB = 1024 * 1024;
  const timer = setInterval(() => {
    const memory = process.memoryUsage();
    const kinds: Record<string, number> = {};
    const resources = process.getActiveResourcesInfo();
    for (const kind of resources) kinds[kind] = (kinds[kind] ?? 0) + 1;
    const probe: Probe = {
      heapUsedMiB: memory.heapUsed / MiB,
      heapTotalMiB: memory.heapTotal / MiB,
      externalMiB: memory.external / MiB,
      arrayBuffersMiB: memory.arrayBuffers / MiB,
      activeResources: resources.length,
      resourceKinds: kinds,
    };
    process.send?.({ soakProbe: probe });
  }, 1000);
  timer.unref();
  // The channel must not keep the service alive after its own shutdown.
  (process.channel as { unref?: () => void } | undefined)?.unref?.();
}

export {};
