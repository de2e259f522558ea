//! The host's cost of a launch in wgpu alone: 100 launches of one small kernel, each with its own
//! bind group (three storage buffers of 40 and a uniform block), encoded and submitted the ways
//! a plan could be. Prints wgpu's encoding per launch and `queue.submit` per launch and per call,
//! medians of 300 runs after 300 of warm-up (a call's: the median call and the calls' mean).
//! `host-cost vulkan` or `host-cost noop`. The parameter blocks are zeros, so every launch
//! exits at once: the wait it prints is the queue's, not the kernel's.

use std::time::Instant;

use wgpu::util::DeviceExt;

const SHADER: &str = r#"
struct P { n: u32, pad0: u32, pad1: u32, pad2: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> z: array<f32>;
@group(0) @binding(3) var<uniform> p: P;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < p.n) { z[g.x] = x[g.x] + y[g.x]; }
}
"#;

const LAUNCHES: usize = 100;
const BUFFERS: usize = 40;
const PIPELINES: usize = 8;

/// How the launches go to the queue.
#[derive(Clone, Copy)]
enum Form {
    /// One pass, one submission.
    OnePass,
    /// Kiln's pieces: 8 launches, then twice as many each time, a submission each.
    Pieces,
    /// A pass per launch (as timing each launch needs), one submission.
    PassEach,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Launches per submission: Kiln's pieces of 100 launches are 8, 16, 32 and the 44 left.
fn piece_sizes(form: Form) -> &'static [usize] {
    match form {
        Form::OnePass | Form::PassEach => &[LAUNCHES],
        Form::Pieces => &[8, 16, 32, 44],
    }
}

fn main() {
    let which = std::env::args().nth(1).unwrap_or_else(|| "noop".into());
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.flags = wgpu::InstanceFlags::empty();
    desc.backends = match which.as_str() {
        "noop" => {
            desc.backend_options.noop.enable = true;
            wgpu::Backends::NOOP
        }
        "vulkan" => wgpu::Backends::VULKAN,
        other => {
            eprintln!("host-cost: `{other}` is not `vulkan` or `noop`");
            std::process::exit(2);
        }
    };
    let instance = wgpu::Instance::new(desc);
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))
        .expect("no adapter on that backend");
    println!("adapter {}", adapter.get_info().name);
    let (device, queue) = pollster::block_on(adapter.request_device(&Default::default()))
        .expect("no device on that adapter");

    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl(SHADER.into()),
    });
    let entry = |binding: u32, ty| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty,
            has_dynamic_offset: binding == 3,
            min_binding_size: None,
        },
        count: None,
    };
    let storage = |read_only| wgpu::BufferBindingType::Storage { read_only };
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: None,
        entries: &[
            entry(0, storage(true)),
            entry(1, storage(true)),
            entry(2, storage(false)),
            entry(3, wgpu::BufferBindingType::Uniform),
        ],
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: None,
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let pipelines: Vec<_> = (0..PIPELINES)
        .map(|_| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: None,
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            })
        })
        .collect();
    let buffers: Vec<_> = (0..BUFFERS)
        .map(|_| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: &[0; 4096],
                usage: wgpu::BufferUsages::STORAGE,
            })
        })
        .collect();
    let ring = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: &[0; 256 * LAUNCHES],
        usage: wgpu::BufferUsages::UNIFORM,
    });
    // Launch i reads two buffers and writes a third, none the same.
    let groups: Vec<wgpu::BindGroup> = (0..LAUNCHES)
        .map(|i| {
            let (a, b) = (i % BUFFERS, (i * 7 + 3) % BUFFERS);
            let c = (1..BUFFERS)
                .map(|k| (i * 13 + k) % BUFFERS)
                .find(|c| *c != a && *c != b)
                .unwrap_or(0);
            let whole = |n: usize| buffers[n].as_entire_binding();
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: whole(a),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: whole(b),
                    },
                    wgpu::BindGroupEntry {
                        binding: 2,
                        resource: whole(c),
                    },
                    wgpu::BindGroupEntry {
                        binding: 3,
                        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                            buffer: &ring,
                            offset: 0,
                            size: wgpu::BufferSize::new(16),
                        }),
                    },
                ],
            })
        })
        .collect();
    let launch = |pass: &mut wgpu::ComputePass<'_>, i: usize| {
        pass.set_pipeline(&pipelines[i % PIPELINES]);
        pass.set_bind_group(0, &groups[i], &[(256 * i) as u32]);
        pass.dispatch_workgroups(16, 1, 1);
    };

    let forms = [
        ("one pass, one submission", Form::OnePass),
        ("pieces 8, 16, 32, ...", Form::Pieces),
        ("a pass per launch, one submission", Form::PassEach),
    ];
    for (name, form) in forms {
        let (mut encode, mut submit, mut each_submit, mut wait) = (vec![], vec![], vec![], vec![]);
        for run in 0..600 {
            let (mut encode_s, mut submit_s, mut first) = (0.0, 0.0, 0);
            for &size in piece_sizes(form) {
                let began = Instant::now();
                let mut encoder = device.create_command_encoder(&Default::default());
                match form {
                    Form::PassEach => {
                        for i in first..first + size {
                            launch(&mut encoder.begin_compute_pass(&Default::default()), i);
                        }
                    }
                    _ => {
                        let mut pass = encoder.begin_compute_pass(&Default::default());
                        (first..first + size).for_each(|i| launch(&mut pass, i));
                    }
                }
                let commands = encoder.finish();
                let encoded = Instant::now();
                queue.submit([commands]);
                let call = encoded.elapsed().as_secs_f64();
                encode_s += (encoded - began).as_secs_f64();
                submit_s += call;
                if run >= 300 {
                    each_submit.push(call * 1e6);
                }
                first += size;
            }
            let began = Instant::now();
            device
                .poll(wgpu::PollType::wait_indefinitely())
                .expect("the device was lost");
            if run >= 300 {
                wait.push(began.elapsed().as_secs_f64() * 1e3);
                encode.push(encode_s * 1e6 / LAUNCHES as f64);
                submit.push(submit_s * 1e6 / LAUNCHES as f64);
            }
        }
        let (e, s) = (median(encode), median(submit));
        let mean_call = each_submit.iter().sum::<f64>() / each_submit.len() as f64;
        println!(
            "{name:36} encode {e:.2} µs/launch, submit {s:.2} µs/launch (a call: median {:.1}, \
             mean {mean_call:.1} µs), total {:.2}; wait {:.3} ms",
            median(each_submit),
            e + s,
            median(wait)
        );
    }
}
