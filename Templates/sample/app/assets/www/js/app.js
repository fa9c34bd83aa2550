document.addEventListener('deviceready', function () { console.log('original app.js'); });
