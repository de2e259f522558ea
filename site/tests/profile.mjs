// Runs in the page (page.evaluate): the WebGPU adapter's DeviceProfile
// (kernels/src/device.rs), mapped the way wgpu's WebGPU backend maps adapter info.
export async function readProfile() {
  const adapter = await navigator.gpu?.requestAdapter();
  if (!adapter) return { error: 'no WebGPU adapter (navigator.gpu missing or empty)' };
  const f = (name) => adapter.features.has(name);
  const info = adapter.info;
  const l = adapter.limits;
  return {
    name: info.description || [info.vendor, info.architecture].filter(Boolean).join(' '),
    backend: 'webgpu',
    device_type: info.isFallbackAdapter ? 'cpu' : 'other',
    vendor: 0,
    device: 0,
    driver: '',
    driver_info: [navigator.userAgent.match(/Chrom(e|ium)\/[0-9.]+/)?.[0], info.vendor, info.architecture]
      .filter(Boolean).join(', '),
    features: {
      shader_f16: f('shader-f16'), subgroup: f('subgroups'),
      timestamp_query: f('timestamp-query'), cooperative_matrix: false,
      // f32 atomics are a native-only wgpu feature: no browser offers them.
      float32_atomic: false,
    },
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

// An empty page on the loopback server: a secure context for navigator.gpu.
export const BLANK = { '/': '<!doctype html><title>kiln</title><link rel="icon" href="data:,">' };
