//! A picture of a replay: [`timeline_svg`].

use cl_pool::trace::TimelinePoint;

/// `a / b` as a float, 0 when `b` is 0 (plot coordinates, hit rates, peak ratios).
#[expect(
    clippy::cast_precision_loss,
    reason = "ratios of counts; 52 bits of mantissa are plenty"
)]
pub(crate) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// An SVG line plot of managed (blue) and active (orange) bytes over a replay's events, for a
/// person to look at instead of reading numbers.
#[must_use]
pub(crate) fn timeline_svg(points: &[TimelinePoint], title: &str) -> String {
    use std::fmt::Write as _;
    const W: f64 = 900.0;
    const H: f64 = 400.0;
    const M: f64 = 50.0;
    let max = points
        .iter()
        .map(|p| p.managed_bytes.max(p.active_bytes))
        .max()
        .unwrap_or(0)
        .max(1);
    let n = points.len().max(2) - 1;
    let xy = |i: usize, v: usize| {
        let x = M + (W - 2.0 * M) * ratio(i as u64, n as u64);
        let y = H - M - (H - 2.0 * M) * ratio(v as u64, max as u64);
        (x, y)
    };
    let path = |f: &dyn Fn(&TimelinePoint) -> usize| {
        let mut d = String::new();
        for (i, p) in points.iter().enumerate() {
            let (x, y) = xy(i, f(p));
            let _ = write!(d, "{}{x:.1},{y:.1} ", if i == 0 { "M" } else { "L" });
        }
        d
    };
    let esc = title
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let mib = ratio(max as u64, 1 << 20);
    format!(
        concat!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n",
            "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
            "<text x=\"{m}\" y=\"20\" font-size=\"14\">{title}</text>\n",
            "<line x1=\"{m}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"black\"/>\n",
            "<line x1=\"{m}\" y1=\"{m}\" x2=\"{m}\" y2=\"{b}\" stroke=\"black\"/>\n",
            "<text x=\"5\" y=\"{m}\">{mib:.0} MiB</text>\n",
            "<text x=\"5\" y=\"{b}\">0</text>\n",
            "<text x=\"{r}\" y=\"{lb}\" text-anchor=\"end\">{n} events</text>\n",
            "<path d=\"{managed}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1\"/>\n",
            "<path d=\"{active}\" fill=\"none\" stroke=\"#ff7f0e\" stroke-width=\"1\"/>\n",
            "<text x=\"{r}\" y=\"40\" text-anchor=\"end\" fill=\"#1f77b4\">managed</text>\n",
            "<text x=\"{r}\" y=\"55\" text-anchor=\"end\" fill=\"#ff7f0e\">active</text>\n",
            "</svg>\n"
        ),
        w = W,
        h = H,
        m = M,
        b = H - M,
        r = W - M,
        lb = H - M + 20.0,
        title = esc,
        mib = mib,
        n = points.len(),
        managed = path(&|p| p.managed_bytes),
        active = path(&|p| p.active_bytes),
    )
}
