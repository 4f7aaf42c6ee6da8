use dsh_core::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct Db(u32);
struct App(u32);

#[test]
fn basics() {
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let l = log.clone();
    let db = plugin_fn("db", move |scope, ()| {
        scope.provide(Arc::new(Db(1)))?;
        let l = l.clone();
        scope.on_dispose(move || l.lock().unwrap().push("db down".into()))?;
        Ok(())
    })
    .provides::<Db>();
    let l = log.clone();
    let app = plugin_fn("app", move |scope, db: Dep<Db>| {
        let n = db.get()?.0;
        scope.provide(Arc::new(App(n + 1)))?;
        let l = l.clone();
        let db2 = db.clone();
        scope.on_dispose(move || {
            l.lock().unwrap().push(format!(
                "app down, db {}",
                db2.get().map(|d| d.0).unwrap_or(0)
            ))
        })?;
        Ok(())
    })
    .provides::<App>();
    let ctx = Context::builder()
        .add_plugin(app)
        .add_plugin(db)
        .build()
        .unwrap();
    assert_eq!(ctx.expect::<App>().0, 2);
    assert_eq!(ctx.with::<Db, _>(|d| d.0), Some(1));
    ctx.disable("db").unwrap();
    assert_eq!(*log.lock().unwrap(), ["app down, db 1", "db down"]);
    assert!(ctx.get::<App>().is_none());
    assert_eq!(ctx.plugin_state("app"), Some(PluginState::Pending));
    assert_eq!(ctx.plugins()[0].pending_on, ["Db"]);
    ctx.enable("db").unwrap();
    assert_eq!(ctx.plugin_state("app"), Some(PluginState::Active));
    ctx.dispose();
    assert!(ctx.plugins().is_empty());
}

#[test]
fn helper_thread_provide_during_apply_completes() {
    let p = plugin_fn("helper", |scope, ()| {
        let s = scope.clone();
        let h = std::thread::spawn(move || s.provide(Arc::new(Db(5))));
        h.join().unwrap()?;
        Ok(())
    })
    .provides::<Db>();
    let ctx = Context::builder().add_plugin(p).build().unwrap();
    assert_eq!(ctx.expect::<Db>().0, 5);
}

#[test]
fn helper_thread_load_and_dispose_during_apply_complete() {
    let p = plugin_fn("parent", |scope, ()| {
        let ctx = scope.context().unwrap();
        let h = std::thread::spawn(move || {
            let child = ctx.load(plugin_fn("late", |_, ()| Ok(()))).unwrap();
            let t = ctx.disable("parent").unwrap();
            (child, t)
        });
        let (child, t) = h.join().unwrap();
        assert!(!t.is_done());
        assert_eq!(
            child.wait_active(Duration::from_millis(10)),
            Err(WaitError::Reentrant)
        );
        Ok(())
    });
    let ctx = Context::builder().add_plugin(p).build().unwrap();
    assert_eq!(ctx.plugin_state("late"), Some(PluginState::Active));
    assert_eq!(ctx.plugin_state("parent"), Some(PluginState::Disabled));
}

#[test]
fn failed_apply_error_is_typed() {
    let p = plugin_fn("bad", |_, ()| {
        Err(PluginError::new("NOPE", std::io::Error::other("x")).into())
    });
    let ctx = Context::builder().add_plugin(p).build().unwrap();
    let h = ctx.plugin("bad").unwrap();
    assert_eq!(h.state(), PluginState::Failed);
    assert_eq!(h.error().unwrap().code(), "NOPE");
    assert_eq!(
        h.wait_active(Duration::from_millis(10)).unwrap_err().code(),
        "PLUGIN_FAILED"
    );
}
