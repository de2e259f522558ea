//! Draws a frame's pixels (a u32 RGBA8 storage buffer on the GPU, no readback) to the surface,
//! letterboxed into a rectangle of it, and a text bitmap (the HUD, or the presenter panel) at a
//! place of it.

use kiln::Tensor;

const SHADER: &str = r#"
struct View {
    src: vec2<u32>,
    dst_origin: vec2<u32>,
    dst: vec2<u32>,
    hud_origin: vec2<u32>,
    hud: vec2<u32>,
    _pad: vec2<u32>,
}

@group(0) @binding(0) var<storage, read> pixels: array<u32>;
@group(0) @binding(1) var<uniform> view: View;
@group(0) @binding(2) var hud: texture_2d<f32>;

@vertex
fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    // One triangle that covers the screen.
    let uv = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4<f32>(uv * 2.0 - 1.0, 0.0, 1.0);
}

@fragment
fn fs(@builtin(position) pos: vec4<f32>) -> @location(0) vec4<f32> {
    var colour = vec3<f32>(0.05, 0.05, 0.07);
    let src = vec2<f32>(view.src);
    let dst = vec2<f32>(view.dst);
    let scale = min(dst.x / src.x, dst.y / src.y);
    let p = (pos.xy - vec2<f32>(view.dst_origin) - (dst - src * scale) * 0.5) / scale;
    if (all(p >= vec2<f32>(0.0)) && all(p < src)) {
        let px = pixels[u32(p.y) * view.src.x + u32(p.x)];
        colour = unpack4x8unorm(px).rgb;
    }
    let h = vec2<u32>(pos.xy) - view.hud_origin;
    if (all(vec2<u32>(pos.xy) >= view.hud_origin) && all(h < view.hud)) {
        let t = textureLoad(hud, h, 0);
        colour = mix(colour, t.rgb, t.a);
    }
    return vec4<f32>(colour, 1.0);
}
"#;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct View {
    src: [u32; 2],
    dst_origin: [u32; 2],
    dst: [u32; 2],
    hud_origin: [u32; 2],
    hud: [u32; 2],
    _pad: [u32; 2],
}

/// Where the frame and the text bitmap go on the surface, in pixels.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// The rectangle the frame is letterboxed into: origin and size.
    pub frame: ([u32; 2], [u32; 2]),
    /// The text bitmap's top-left corner.
    pub text_origin: [u32; 2],
}

impl Layout {
    /// The frame fills the surface; the HUD sits over its top-left corner.
    pub fn full(size: [u32; 2]) -> Layout {
        Layout {
            frame: ([0, 0], size),
            text_origin: [0, 0],
        }
    }

    /// Presenter mode: the live visual on the left, the panel (`panel_width` wide) on the right.
    pub fn presenter(size: [u32; 2], panel_width: u32) -> Layout {
        let visual = size[0].saturating_sub(panel_width).max(1);
        Layout {
            frame: ([0, 0], [visual, size[1]]),
            text_origin: [visual, 0],
        }
    }
}

pub struct Display {
    pipeline: wgpu::RenderPipeline,
    view: wgpu::Buffer,
    hud: wgpu::Texture,
    hud_size: [u32; 2],
}

impl Display {
    pub fn new(device: &wgpu::Device, format: wgpu::TextureFormat) -> Display {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("kiln-app display"),
            source: wgpu::ShaderSource::Wgsl(SHADER.into()),
        });
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("kiln-app display"),
            layout: None,
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs"),
                compilation_options: Default::default(),
                targets: &[Some(format.into())],
            }),
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            multiview_mask: None,
            cache: None,
        });
        let view = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("kiln-app view"),
            size: std::mem::size_of::<View>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let (hud, hud_size) = (hud_texture(device, 1, 1), [0, 0]);
        Display {
            pipeline,
            view,
            hud,
            hud_size,
        }
    }

    /// Replaces the HUD bitmap (RGBA8, `w` × `h`).
    pub fn set_hud(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        w: u32,
        h: u32,
        rgba: &[u8],
    ) {
        if self.hud.width() != w || self.hud.height() != h {
            self.hud = hud_texture(device, w, h);
        }
        queue.write_texture(
            self.hud.as_image_copy(),
            rgba,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(4 * w),
                rows_per_image: None,
            },
            wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
        );
        self.hud_size = [w, h];
    }

    /// Records the draw of `pixels` ([H, W] u32) into `target`, placed by `layout`.
    pub fn draw(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        layout: Layout,
        pixels: &Tensor,
    ) {
        let [h, w] = match *pixels.shape() {
            [h, w] => [h as u32, w as u32],
            _ => [1, 1],
        };
        let view = View {
            src: [w, h],
            dst_origin: layout.frame.0,
            dst: layout.frame.1,
            hud_origin: layout.text_origin,
            hud: self.hud_size,
            _pad: [0; 2],
        };
        queue.write_buffer(&self.view, 0, bytemuck::bytes_of(&view));
        let hud_view = self
            .hud
            .create_view(&wgpu::TextureViewDescriptor::default());
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("kiln-app display"),
            layout: &self.pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::Buffer(pixels.binding()),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: self.view.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: wgpu::BindingResource::TextureView(&hud_view),
                },
            ],
        });
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("kiln-app display"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: target,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                    store: wgpu::StoreOp::Store,
                },
            })],
            ..Default::default()
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.draw(0..3, 0..1);
    }
}

fn hud_texture(device: &wgpu::Device, w: u32, h: u32) -> wgpu::Texture {
    device.create_texture(&wgpu::TextureDescriptor {
        label: Some("kiln-app hud"),
        size: wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
        view_formats: &[],
    })
}
