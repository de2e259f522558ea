// Prints the DeviceProfile (kernels/src/device.rs) of headless Chromium's WebGPU adapter, mapped
// the way wgpu's WebGPU backend maps it. Usage: node tests/capture-profile.mjs > profile.json
import { launch, serve } from './browser.mjs';

const PAGE = `<!doctype html><script type="module">
  const adapter = await navigator.gpu?.requestAdapter();
  if (!adapter) { window.profile = { error: 'no WebGPU adapter' }; }
  else {
    const f = (name) => adapter.features.has(name);
    const info = adapter.info;
    const l = adapter.limits;
    window.profile = {
      name: info.description || [info.vendor, info.architecture].filter(Boolean).join(' '),
      backend: 'webgpu',
      device_type: info.isFallbackAdapter ? 'cpu' : 'other',
      vendor: 0, device: 0,
      driver: '',
      driver_info: [navigator.userAgent.match(/Chrom(e|ium)\\/[0-9.]+/)?.[0], info.vendor, info.architecture].filter(Boolean).join(', '),
      features: { shader_f16: f('shader-f16'), subgroup: f('subgroups'),
                  timestamp_query: f('timestamp-query'), cooperative_matrix: false },
      subgroup_min_size: f('subgroups') ? (info.subgroupMinSize ?? 0) : 0,
      subgroup_max_size: f('subgroups') ? (info.subgroupMaxSize ?? 0) : 0,
      cooperative_matrix: [],
      limits: {
        max_compute_workgroup_storage_size: l.maxComputeWorkgroupStorageSize,
        max_compute_invocations_per_workgroup: l.maxComputeInvocationsPerWorkgroup,
        max_compute_workgroup_size_x: l.maxComputeWorkgroupSizeX,
        max_compute_workgroup_size_y: l.maxComputeWorkgroupSizeY,
        max_compute_workgroup_size_z: l.maxComputeWorkgroupSizeZ,
        max_compute_workgroups_per_dimension: l.maxComputeWorkgroupsPerDimension,
        max_storage_buffer_binding_size: l.maxStorageBufferBindingSize,
        max_buffer_size: l.maxBufferSize,
        max_storage_buffers_per_shader_stage: l.maxStorageBuffersPerShaderStage,
      },
    };
  }
</script>`;

const server = await serve('/nonexistent', { '/': PAGE });
const browser = await launch();
try {
  const page = await browser.newPage();
  await page.goto(server.url + '/');
  const profile = await page.waitForFunction(() => window.profile, null, { timeout: 30000 });
  const value = await profile.jsonValue();
  if (value.error) throw new Error(value.error);
  console.log(JSON.stringify(value, null, 2));
} finally {
  await browser.close();
  server.close();
}
