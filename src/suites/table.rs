//! Plain-text tables for the bench suites' reports: columns padded to their widest cell.

/// `lines` (the header first) as columns two spaces apart; columns from `right_from` on are
/// right-aligned (numbers), the others left-aligned. Trailing spaces are trimmed.
pub fn render(lines: &[Vec<String>], right_from: usize) -> String {
    let columns = lines.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            lines
                .iter()
                .filter_map(|l| l.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for line in lines {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, w))| {
                let pad = " ".repeat(w - cell.chars().count());
                if c >= right_from {
                    format!("{pad}{cell}")
                } else {
                    format!("{cell}{pad}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_line_up_left_or_right() {
        let lines = vec![
            vec!["metric".to_string(), "a".to_string()],
            vec!["x".to_string(), "1234".to_string()],
        ];
        assert_eq!(super::render(&lines, 1), "metric     a\nx       1234\n");
        assert_eq!(
            super::render(&lines, usize::MAX),
            "metric  a\nx       1234\n"
        );
    }
}
