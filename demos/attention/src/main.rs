fn main() {
    kiln_app::run::<attention::Attention>();
}
