//! Build script: the platform link flags a Node addon needs.

fn main() {
    napi_build::setup();
}
