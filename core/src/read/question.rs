//! What a question asks for, read from its words without an LLM: the dates
//! it names ("on October 25, 2022", "in May 2023", "in June", "in 2023",
//! "2023-05-08", "yesterday", "last week", "last May") as time windows, and
//! whether it asks for a time ("when …") or a quantity ("how many …").
//! Recall raises a candidate whose time falls in a named window and one
//! whose text holds the kind of answer asked for (`scoring.rs`); each is a
//! factor in the hit's explanation. English words only, like the stemmer
//! and the stop words; a question in another language is left as it is.

use std::collections::BTreeSet;

use crate::calendar::{MONTH_NAMES, MS_PER_DAY, civil_from_millis, days_from_civil, days_in_month};
use crate::model::Millis;
use crate::text;
use crate::thresholds::DATE_MATCH_SLACK_DAYS;

const MONTH_ABBREVIATIONS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
/// Words before a bare month name that make it a date ("in June"), not
/// the modal "may".
const MONTH_PREPOSITIONS: &[&str] = &[
    "in",
    "during",
    "of",
    "early",
    "late",
    "mid",
    "through",
    "throughout",
];
/// Words before a bare year that make it a date ("in 2023"); "since" and
/// "until" open a range the windows do not model, so they name none.
const YEAR_PREPOSITIONS: &[&str] = &["in", "during", "throughout"];
/// Words of a text that name a time (a "when" question's answer).
const TIME_WORDS: &[&str] = &[
    "yesterday",
    "today",
    "tonight",
    "tomorrow",
    "ago",
    "last",
    "next",
    "recently",
    "weekend",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "morning",
    "evening",
    "night",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "since",
    "before",
    "after",
    "earlier",
    "later",
];
/// Words of a text that name a quantity (a "how many" question's answer).
const NUMBER_WORDS: &[&str] = &[
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "twenty", "hundred", "thousand", "once", "twice", "dozen", "several", "few",
];

/// The kind of answer a question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asks {
    Time,
    Quantity,
}

/// A stretch of time a question names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Window {
    /// From one instant to another, both included.
    Span(Millis, Millis),
    /// A month of any year ("in June").
    Month(u32),
}

/// What a question asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Question {
    windows: Vec<Window>,
    asks: Option<Asks>,
}

impl Question {
    /// Reads `query`; `now` anchors relative dates ("yesterday").
    pub fn read(query: &str, now: Millis) -> Self {
        let tokens = text::tokens(query);
        Self {
            windows: windows(&tokens, now),
            asks: asks(&tokens),
        }
    }

    /// Whether an event at `time` falls in a window the question names,
    /// or up to `DATE_MATCH_SLACK_DAYS` after it (what happened is told
    /// after it happened).
    pub fn matches_time(&self, time: Millis) -> bool {
        let slack = DATE_MATCH_SLACK_DAYS * MS_PER_DAY;
        self.windows.iter().any(|w| match *w {
            Window::Span(from, to) => from <= time && time <= to.saturating_add(slack),
            Window::Month(m) => {
                civil_from_millis(time).1 == m
                    || civil_from_millis(time.saturating_sub(slack)).1 == m
            }
        })
    }

    /// The kind of answer the question asks for, when a text of these
    /// tokens (`text::token_set`) holds one.
    pub fn answered_by(&self, tokens: &BTreeSet<String>) -> Option<Asks> {
        let asks = self.asks?;
        let found = tokens.iter().any(|t| match asks {
            Asks::Time => {
                TIME_WORDS.contains(&t.as_str()) || month(t).is_some() || year(t).is_some()
            }
            Asks::Quantity => {
                t.chars().all(|c| c.is_ascii_digit()) || NUMBER_WORDS.contains(&t.as_str())
            }
        });
        found.then_some(asks)
    }
}

/// "when …", "what year …", "how long ago …" ask for a time; "how many /
/// much / long / old / often / far …" for a quantity. A leading "and" or
/// "so" is skipped.
fn asks(tokens: &[String]) -> Option<Asks> {
    let start = usize::from(matches!(
        tokens.first().map(String::as_str),
        Some("and" | "so" | "then")
    ));
    let word = |i: usize| tokens.get(start + i).map(String::as_str);
    match (word(0), word(1), word(2)) {
        (Some("when"), _, _) => Some(Asks::Time),
        (Some("what" | "which"), Some("year" | "month" | "day" | "date" | "time"), _) => {
            Some(Asks::Time)
        }
        (Some("how"), Some("long"), Some("ago")) => Some(Asks::Time),
        (Some("how"), Some("many" | "much" | "long" | "old" | "often" | "far"), _) => {
            Some(Asks::Quantity)
        }
        _ => None,
    }
}

fn month(token: &str) -> Option<u32> {
    MONTH_NAMES
        .iter()
        .position(|m| *m == token)
        .or_else(|| {
            MONTH_ABBREVIATIONS
                .iter()
                .position(|m| !m.is_empty() && *m == token)
        })
        .map(|i| i as u32 + 1)
}

/// "25", "25th", "1st" → a day of the month.
fn day(token: &str) -> Option<u32> {
    let digits = token.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = token.get(digits.len()..).unwrap_or_default();
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") || digits.len() > 2 {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

fn year(token: &str) -> Option<i64> {
    (token.len() == 4)
        .then(|| token.parse().ok())
        .flatten()
        .filter(|y| (1900..=2100).contains(y))
}

fn day_span(y: i64, m: u32, d: u32) -> Option<Window> {
    (d <= days_in_month(y, m)).then(|| {
        let day = days_from_civil(y, m, d);
        days_span(day, day)
    })
}

/// From the start of one day to the end of another (saturating: a clock
/// at the end of time still reads).
fn days_span(from_day: i64, to_day: i64) -> Window {
    Window::Span(
        from_day.saturating_mul(MS_PER_DAY),
        to_day
            .saturating_add(1)
            .saturating_mul(MS_PER_DAY)
            .saturating_sub(1),
    )
}

fn month_span(y: i64, m: u32) -> Window {
    let first = days_from_civil(y, m, 1);
    days_span(first, first + i64::from(days_in_month(y, m)) - 1)
}

/// The dates a question names, as windows.
fn windows(t: &[String], now: Millis) -> Vec<Window> {
    let word = |i: usize| t.get(i).map(String::as_str).unwrap_or_default();
    let today = now.div_euclid(MS_PER_DAY);
    let (this_year, this_month, _) = civil_from_millis(now);
    let mut out = Vec::new();
    let mut used = vec![false; t.len()];
    for i in 0..t.len() {
        if used[i] {
            continue;
        }
        // 2023-05-08 (tokens: 2023 05 08)
        if let (Some(y), Some(m), Some(d)) = (
            year(word(i)),
            word(i + 1)
                .parse::<u32>()
                .ok()
                .filter(|m| (1..=12).contains(m)),
            day(word(i + 2)).filter(|_| word(i + 2).len() == 2),
        ) && let Some(w) = day_span(y, m, d)
        {
            out.push(w);
            used[i..i + 3].fill(true);
            continue;
        }
        if let Some(m) = month(word(i)) {
            let before = i.checked_sub(1).map(word).unwrap_or_default();
            let day_before = i
                .checked_sub(1)
                .filter(|j| !used[*j])
                .and_then(|_| day(before));
            // 25 October 2022 / October 25, 2022
            if let Some(d) = day_before
                && let Some(y) = year(word(i + 1))
                && let Some(w) = day_span(y, m, d)
            {
                out.push(w);
                used[i - 1..i + 2].fill(true);
            } else if let Some(d) = day(word(i + 1))
                && let Some(y) = year(word(i + 2))
                && let Some(w) = day_span(y, m, d)
            {
                out.push(w);
                used[i..i + 3].fill(true);
            } else if let Some(y) = year(word(i + 1)) {
                out.push(month_span(y, m));
                used[i..i + 2].fill(true);
            } else if before == "last" {
                let y = if m < this_month {
                    this_year
                } else {
                    this_year - 1
                };
                out.push(month_span(y, m));
            } else if day_before.is_some()
                || day(word(i + 1)).is_some()
                || MONTH_PREPOSITIONS.contains(&before)
            {
                out.push(Window::Month(m));
            }
            continue;
        }
        if let Some(y) = year(word(i))
            && i > 0
            && YEAR_PREPOSITIONS.contains(&word(i - 1))
        {
            out.push(days_span(
                days_from_civil(y, 1, 1),
                days_from_civil(y, 12, 31),
            ));
            continue;
        }
        let monday = today - (today + 3).rem_euclid(7);
        match (word(i), word(i + 1)) {
            ("yesterday", _) => out.push(days_span(today - 1, today - 1)),
            ("today" | "tonight", _) => out.push(days_span(today, today)),
            ("last", "week") => out.push(days_span(monday - 7, monday - 1)),
            ("this", "week") => out.push(days_span(monday, today)),
            ("last", "month") => {
                let (y, m) = if this_month == 1 {
                    (this_year - 1, 12)
                } else {
                    (this_year, this_month - 1)
                };
                out.push(month_span(y, m));
            }
            ("this", "month") => out.push(month_span(this_year, this_month)),
            ("last", "year") => out.push(days_span(
                days_from_civil(this_year - 1, 1, 1),
                days_from_civil(this_year - 1, 12, 31),
            )),
            ("this", "year") => out.push(days_span(days_from_civil(this_year, 1, 1), today)),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Millis = MS_PER_DAY;

    fn at(y: i64, m: u32, d: u32) -> Millis {
        days_from_civil(y, m, d) * DAY + 12 * 3_600_000
    }

    #[test]
    fn absolute_dates_become_windows() {
        let now = at(2026, 11, 25);
        let q = Question::read("How did Joanna feel on October 25, 2022 about it?", now);
        assert!(q.matches_time(at(2022, 10, 25)));
        assert!(q.matches_time(at(2022, 11, 1)), "within the slack after it");
        assert!(!q.matches_time(at(2022, 10, 24)));
        assert!(!q.matches_time(at(2022, 11, 3)));
        let q = Question::read("what did she find on 1 February, 2023", now);
        assert!(q.matches_time(at(2023, 2, 1)));
        assert!(!q.matches_time(at(2023, 1, 31)));
        let q = Question::read("What setback did Melanie face in October 2023?", now);
        assert!(q.matches_time(at(2023, 10, 2)) && q.matches_time(at(2023, 10, 31)));
        assert!(!q.matches_time(at(2023, 9, 30)) && !q.matches_time(at(2022, 10, 15)));
        let q = Question::read("When did Melanie go camping in June?", now);
        assert!(q.matches_time(at(2023, 6, 15)) && q.matches_time(at(2019, 6, 1)));
        assert!(
            q.matches_time(at(2023, 7, 5)),
            "early July tells of late June"
        );
        assert!(!q.matches_time(at(2023, 8, 5)));
        let q = Question::read("How many times has she gone to the beach in 2023?", now);
        assert!(q.matches_time(at(2023, 3, 3)) && !q.matches_time(at(2022, 12, 1)));
        let q = Question::read("what happened on 2023-05-08", now);
        assert!(q.matches_time(at(2023, 5, 8)) && !q.matches_time(at(2023, 5, 7)));
    }

    #[test]
    fn words_that_only_look_like_dates_are_not() {
        let now = at(2026, 11, 25);
        for q in [
            "May I ask what you like?",
            "What did you march for?",
            "Which of the 2023 plans did she keep?",
            "When did she adopt a dog?",
            "What is 31 times 12?",
        ] {
            assert_eq!(Question::read(q, now).windows, vec![], "{q}");
        }
    }

    #[test]
    fn any_stored_time_is_compared_without_overflow() {
        let now = at(2026, 11, 25);
        for q in ["what happened in June", "what happened in May 2023"] {
            let q = Question::read(q, now);
            for t in [Millis::MIN, Millis::MIN + 1, -1, 0, Millis::MAX] {
                let _ = q.matches_time(t);
            }
        }
        assert!(Question::read("yesterday", Millis::MAX).matches_time(Millis::MAX - DAY));
        for q in ["this month", "this week", "last year", "last may", "today"] {
            let _ = Question::read(q, Millis::MAX).matches_time(0);
            let _ = Question::read(q, Millis::MIN).matches_time(0);
        }
    }

    #[test]
    fn relative_dates_count_from_now() {
        let now = at(2026, 11, 25); // a Wednesday
        let q = Question::read("what did we discuss yesterday", now);
        assert!(q.matches_time(at(2026, 11, 24)) && !q.matches_time(at(2026, 11, 23)));
        let q = Question::read("what did I say last week", now);
        assert!(q.matches_time(at(2026, 11, 16)) && q.matches_time(at(2026, 11, 22)));
        assert!(!q.matches_time(at(2026, 11, 15)));
        let q = Question::read("what did I plan last May", now);
        assert!(q.matches_time(at(2026, 5, 20)) && !q.matches_time(at(2025, 5, 20)));
        let q = Question::read("what did I plan last December", now);
        assert!(q.matches_time(at(2025, 12, 20)));
        let q = Question::read("anything from last month?", now);
        assert!(q.matches_time(at(2026, 10, 1)) && !q.matches_time(at(2026, 9, 30)));
    }

    #[test]
    fn the_kind_of_answer_asked_for() {
        let now = at(2026, 11, 25);
        let when = Question::read("When did Caroline go to the support group?", now);
        assert_eq!(
            when.answered_by(&text::token_set("I went to a support group yesterday")),
            Some(Asks::Time)
        );
        assert_eq!(
            when.answered_by(&text::token_set("It was in May 2023")),
            Some(Asks::Time)
        );
        assert_eq!(
            when.answered_by(&text::token_set("The support group was great")),
            None
        );
        let many = Question::read("How many kids does Melanie have?", now);
        assert_eq!(
            many.answered_by(&text::token_set("I have 3 kids")),
            Some(Asks::Quantity)
        );
        assert_eq!(
            many.answered_by(&text::token_set("two boys and a girl")),
            Some(Asks::Quantity)
        );
        assert_eq!(many.answered_by(&text::token_set("my kids love it")), None);
        let what = Question::read("What did Caroline research?", now);
        assert_eq!(
            what.answered_by(&text::token_set("yesterday I researched 3 agencies")),
            None
        );
        assert_eq!(
            Question::read("what year did she move?", now).asks,
            Some(Asks::Time)
        );
        assert_eq!(
            Question::read("how long ago was it?", now).asks,
            Some(Asks::Time)
        );
    }
}
