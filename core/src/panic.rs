//! Panic payloads as text: how a contained panic (a host callback, a handler, a turn) is reported.
//!
//! A ground-floor module: the connection (`rpc`), the facade (`agent`) and the runner all catch
//! panics and report their message, and none of them may reach into another for it.

/// The text of a panic payload: the `&str` or `String` it was raised with, else `"panic"`.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::panic_message;

    #[test]
    fn payloads_become_their_text() {
        let caught = |f: fn()| std::panic::catch_unwind(f).expect_err("it panics");
        assert_eq!(panic_message(&*caught(|| panic!("static text"))), "static text");
        assert_eq!(panic_message(&*caught(|| panic!("formatted {}", 42))), "formatted 42");
        assert_eq!(panic_message(&*caught(|| std::panic::panic_any(7_u8))), "panic");
    }
}
