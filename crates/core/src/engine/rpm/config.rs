//! The responsiveness server's configuration document (`/.well-known/nq`): read under the
//! draft's key names (`small_download_url`, `large_download_url`, `upload_url`) or the older
//! ones Apple's server spec and the shipping clients use (`small_https_download_url`,
//! `large_https_download_url`, `https_upload_url`), checked as the draft says (version 1, the
//! three URLs present, one host), and `test_endpoint` honoured.

use http::Uri;

/// The three URLs of a configuration, and the host to connect to.
#[derive(Clone, Debug, PartialEq)]
pub struct RpmUrls {
    pub small: Uri,
    pub large: Uri,
    pub upload: Uri,
    /// `test_endpoint`: connect here instead of the URLs' host (the requests keep it).
    pub test_endpoint: Option<String>,
}

/// The draft's names and the older ones, in that order of preference.
const KEYS: [(&str, &str, &str); 3] = [
    ("small", "small_download_url", "small_https_download_url"),
    ("large", "large_download_url", "large_https_download_url"),
    ("upload", "upload_url", "https_upload_url"),
];

/// Reads a configuration document; the error says what is wrong with it, in one line.
pub fn parse(body: &[u8]) -> Result<RpmUrls, String> {
    let doc: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("the configuration is not JSON ({e})"))?;
    let obj = doc.as_object().ok_or("the configuration is not a JSON object")?;
    // Apple's published documents carried no version before the draft had one.
    match obj.get("version") {
        None => {}
        Some(v) if v.as_u64() == Some(1) => {}
        Some(v) => return Err(format!("the configuration's version is {v}, not 1")),
    }
    let urls = obj
        .get("urls")
        .and_then(|u| u.as_object())
        .ok_or("the configuration has no \"urls\" object")?;
    let mut found = Vec::new();
    for (what, key, old) in KEYS {
        let text = urls
            .get(key)
            .or_else(|| urls.get(old))
            .and_then(|v| v.as_str())
            .ok_or_else(|| format!("the configuration has no {key} (nor {old})"))?;
        let uri: Uri = text
            .parse()
            .map_err(|_| format!("the configuration's {what} URL is not a URL"))?;
        if !matches!(uri.scheme_str(), Some("https" | "http")) || uri.host().is_none() {
            return Err(format!("the configuration's {what} URL is not an http(s) URL"));
        }
        found.push(uri);
    }
    let host = |u: &Uri| {
        (
            u.host().map(str::to_ascii_lowercase),
            u.port_u16(),
            u.scheme_str().map(str::to_string),
        )
    };
    if found.iter().any(|u| host(u) != host(&found[0])) {
        return Err("the configuration's URLs are not all on one host (the draft requires it)".into());
    }
    let test_endpoint = match obj.get("test_endpoint") {
        None => None,
        Some(v) => Some(
            v.as_str()
                .ok_or("the configuration's test_endpoint is not a string")?
                .to_string(),
        ),
    };
    let mut it = found.into_iter();
    let (small, large, upload) = (it.next(), it.next(), it.next());
    Ok(RpmUrls {
        small: small.expect("three URLs"),
        large: large.expect("three URLs"),
        upload: upload.expect("three URLs"),
        test_endpoint,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_key_spellings_read_and_the_drafts_checks_hold() {
        let draft = br#"{"version":1,"urls":{"small_download_url":"https://h:4443/small",
            "large_download_url":"https://h:4443/large","upload_url":"https://h:4443/upload"},
            "test_endpoint":"10.0.0.2","other":1}"#;
        let u = parse(draft).expect("the draft's names");
        assert_eq!(u.small.path(), "/small");
        assert_eq!(u.upload.port_u16(), Some(4443));
        assert_eq!(u.test_endpoint.as_deref(), Some("10.0.0.2"));
        let apple = br#"{"version":1,"urls":{"small_https_download_url":"https://h/s",
            "large_https_download_url":"https://h/l","https_upload_url":"https://h/u"}}"#;
        assert_eq!(parse(apple).expect("the older names").large.path(), "/l");
        let two_hosts = br#"{"version":1,"urls":{"small_download_url":"https://a/s",
            "large_download_url":"https://b/l","upload_url":"https://a/u"}}"#;
        assert!(parse(two_hosts).expect_err("two hosts").contains("one host"));
        let v2 = br#"{"version":2,"urls":{}}"#;
        assert!(parse(v2).expect_err("version 2").contains("version is 2"));
        let missing = br#"{"version":1,"urls":{"small_download_url":"https://a/s","upload_url":"https://a/u"}}"#;
        assert!(parse(missing).expect_err("no large").contains("large_download_url"));
        assert!(parse(b"<html>").expect_err("not JSON").contains("not JSON"));
    }
}
